package consume

import (
	"testing"

	"github.com/queenbridge/queenbridge/internal/testenv"
)

// Most tests here run on fakes; those through a real database (and the
// read side on it) start the binary's PostgreSQL when they first ask.
func TestMain(m *testing.M) { testenv.Main(m) }
