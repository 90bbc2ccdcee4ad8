package jsonapi

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testkit"
)

// The helpers of the golden-body tests: an answer writer's output must be
// exactly the bytes written out in the test, and JSON by encoding/json's
// judgement; a decoder's error must be a BadRequest with exactly the text
// the test names.

// golden checks an answer body against its literal golden text.
func golden(t *testing.T, got []byte, want string) { t.Helper(); testkit.Golden(t, got, want) }

// wantBad checks that err is a BadRequest saying exactly want ("" wants
// no error).
func wantBad(t *testing.T, err error, want string) {
	t.Helper()
	testkit.WantError[*BadRequest](t, err, want)
}

// refused reports whether a decoder refused its input, and fails the test
// when the refusal is not a *BadRequest (a 400): a fuzz target's input is
// accepted or refused, never anything else.
func refused(t *testing.T, err error) bool {
	t.Helper()
	var bad *BadRequest
	if err != nil && !errors.As(err, &bad) {
		t.Fatalf("error of the wrong kind: %v", err)
	}
	return err != nil
}

// params is a query: get of the given name/value pairs ("" when absent).
func params(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// Fixed values of the golden bodies.
var (
	uuidA = [16]byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	uuidB = [16]byte{0xff, 0xee, 0xdd, 0xcc, 0xbb, 0xaa, 0x99, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0x00}
	// at is in UTC+2: every writer must print it in UTC.
	at = time.Date(2026, 11, 30, 14, 0, 0, 123456000, time.FixedZone("CEST", 2*3600))
	// atWhole has no fraction of a second: RFC 3339 without one.
	atWhole = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

const (
	uuidAText = "01234567-89ab-cdef-0123-456789abcdef"
	uuidBText = "ffeeddcc-bbaa-9988-7766-554433221100"
	atText    = "2026-11-30T12:00:00.123456Z"
	// nasty needs every kind of escape, and holds a byte that is not
	// UTF-8 (written as U+FFFD) and a character that passes as it is.
	nasty     = "a\"b\\c\nd\re\tf\x01g\x1f\x7fh\xffé"
	nastyJSON = `"a\"b\\c\nd\re\tf\u0001g\u001f` + "\x7f" + `h\ufffdé"`
	// nastyBack is nasty as a JSON reader reads it back.
	nastyBack = "a\"b\\c\nd\re\tf\x01g\x1f\x7fh\ufffdé"
)

func TestAppendString(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"", `""`},
		{"plain text", `"plain text"`},
		{nasty, nastyJSON},
		{"\x00", `"\u0000"`},
		{"caf\u00e9 \U0001f600", "\"caf\u00e9 \U0001f600\""},
		{"\xed\xa0\x80", `"\ufffd\ufffd\ufffd"`}, // an encoded surrogate is not UTF-8
		{"</script>&", `"</script>&"`},
	} {
		got := AppendString([]byte("x"), c.in)
		golden(t, got[1:], c.want)
		if string(got[:1]) != "x" {
			t.Errorf("%q: did not append", c.in)
		}
	}
	var back string
	if err := json.Unmarshal([]byte(nastyJSON), &back); err != nil || back != nastyBack {
		t.Fatalf("%s reads back as %q (%v)", nastyJSON, back, err)
	}
}

func TestAppendUUID(t *testing.T) {
	t.Parallel()
	if got := string(AppendUUID(nil, uuidA)); got != uuidAText {
		t.Errorf("got %s, want %s", got, uuidAText)
	}
	if got := string(AppendUUID([]byte("id:"), [16]byte{})); got != "id:00000000-0000-0000-0000-000000000000" {
		t.Errorf("got %s", got)
	}
}

func TestParseUUID(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want [16]byte
		err  string
	}{
		{in: uuidAText, want: uuidA},
		{in: "FFEEDDCC-BBAA-9988-7766-554433221100", want: uuidB},
		{in: "0123456789abcdef0123456789abcdef", want: uuidA},
		{in: "", err: `not a UUID: ""`},
		{in: uuidAText[:35], err: `not a UUID: "01234567-89ab-cdef-0123-456789abcde"`},
		{in: "0123456789abcdef0123456789abcdeg", err: `not a UUID: "0123456789abcdef0123456789abcdeg"`},
		{in: "+123456789abcdef0123456789abcdef", err: `not a UUID: "+123456789abcdef0123456789abcdef"`},
		{in: "-0123456789abcdef0123456789abcdef---", want: uuidA},
		{in: "01234567-89AB-CDEF-0123-456789ABCDEF", want: uuidA},
		{in: "01234567-89ab-cdef-0123-456789abcdeg", err: `not a UUID: "01234567-89ab-cdef-0123-456789abcdeg"`},
		{in: "0123456-789ab-cdef-0123-456789abcdef", want: uuidA},
		{in: "01234567-89ab-cdef-0123-456789abcdef0", err: `not a UUID: "01234567-89ab-cdef-0123-456789abcdef0"`},
	} {
		got, err := ParseUUID(c.in)
		wantBad(t, err, c.err)
		if c.err == "" && got != c.want {
			t.Errorf("%q: got %x, want %x", c.in, got, c.want)
		}
	}
}

func TestAppendError(t *testing.T) {
	t.Parallel()
	golden(t, AppendError(nil, "queue is required"), `{"error":"queue is required"}`)
	golden(t, AppendError(nil, ""), `{"error":""}`)
	golden(t, AppendError(nil, nasty), `{"error":`+nastyJSON+`}`)
	if got := DecodeError(AppendError(nil, nasty)); got != nastyBack {
		t.Errorf("DecodeError reads %q back as %q", nasty, got)
	}
}

func TestDecodeError(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ body, want string }{
		{`{"error":"too many parked reads"}`, "too many parked reads"},
		{`{"error":"a\nb","other":1}`, "a\nb"},
		{`{"other":1}`, ""},
		{`{"error":5}`, ""},
		{`[]`, ""},
		{``, ""},
		{`not json`, ""},
		{`{"error":"x"`, ""},
	} {
		if got := DecodeError([]byte(c.body)); got != c.want {
			t.Errorf("%s: got %q, want %q", c.body, got, c.want)
		}
	}
}
