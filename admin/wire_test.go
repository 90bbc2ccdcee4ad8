package admin

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/queenbridge/queenbridge/jsonapi"
)

// The helpers of the golden-body tests: an answer writer's output must be
// exactly the bytes written out in the test, and JSON by encoding/json's
// judgement; a decoder's error must be a BadRequest with exactly the text
// the test names.

// golden checks an answer body against its literal golden text.
func golden(t *testing.T, got []byte, want string) {
	t.Helper()
	if string(got) != want {
		t.Errorf("body\n got %s\nwant %s", got, want)
	}
	if !json.Valid(got) {
		t.Errorf("body is not JSON: %s", got)
	}
}

// wantBad checks that err is a BadRequest saying exactly want ("" wants
// no error).
func wantBad(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	var bad *jsonapi.BadRequest
	switch {
	case err == nil:
		t.Fatalf("no error, want %q", want)
	case !errors.As(err, &bad):
		t.Fatalf("error %v is %T, not a BadRequest", err, err)
	case err.Error() != want:
		t.Fatalf("error\n got %q\nwant %q", err.Error(), want)
	}
}
