package jsonapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzBodyPayload: whatever the body, the payload is valid JSON; a JSON body
// (by encoding/json's judgement, and UTF-8) is kept byte for byte, and
// anything else, the empty body too, is a JSON string whose base64 decodes
// to exactly the body (an empty body is "", not null).
func FuzzBodyPayload(f *testing.F) {
	for _, s := range []string{``, `null`, ` {"a":[1,2]} `, "{\"a\":1}\n", `"x"`, `hello`, "\x00\x01\xff", `{"a":"\xff"}`, `1 2`, `[`, `-0.5e+10`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		payload, encoded := BodyPayload(body)
		if !json.Valid(payload) {
			t.Fatalf("payload %q of %q is not JSON", payload, body)
		}
		isJSON := len(body) > 0 && json.Valid(body) && utf8.Valid(body)
		switch {
		case isJSON:
			if encoded || !bytes.Equal(payload, body) {
				t.Fatalf("JSON body %q stored as %q (encoded %v)", body, payload, encoded)
			}
		default:
			var s string
			if !encoded || json.Unmarshal(payload, &s) != nil {
				t.Fatalf("body %q: payload %q, encoded %v", body, payload, encoded)
			}
			back, err := base64.StdEncoding.DecodeString(s)
			if err != nil || !bytes.Equal(back, body) {
				t.Fatalf("body %q came back as %q (%v)", body, back, err)
			}
		}
	})
}
