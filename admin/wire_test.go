package admin

import (
	"testing"

	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/jsonapi"
)

// The golden-body tests' helpers, as jsonapi's: an answer must be exactly
// the bytes the test writes out, a refusal a jsonapi.BadRequest with
// exactly the text it names.
func golden(t *testing.T, got []byte, want string) { t.Helper(); testkit.Golden(t, got, want) }

func wantBad(t *testing.T, err error, want string) {
	t.Helper()
	testkit.WantError[*jsonapi.BadRequest](t, err, want)
}
