package testkit

import (
	"encoding/json"
	"errors"
	"testing"
)

// Golden checks an answer body against its literal golden text: exactly
// those bytes, and JSON by encoding/json's judgement.
func Golden(t testing.TB, got []byte, want string) {
	t.Helper()
	if string(got) != want {
		t.Errorf("body\n got %s\nwant %s", got, want)
	}
	if !json.Valid(got) {
		t.Errorf("body is not JSON: %s", got)
	}
}

// WantError checks that err is an E (a decoder's *jsonapi.BadRequest, say)
// saying exactly want; "" wants no error.
func WantError[E error](t testing.TB, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	var target E
	switch {
	case err == nil:
		t.Fatalf("no error, want %q", want)
	case !errors.As(err, &target):
		t.Fatalf("error %v is %T, not a %T", err, err, target)
	case err.Error() != want:
		t.Fatalf("error\n got %q\nwant %q", err.Error(), want)
	}
}
