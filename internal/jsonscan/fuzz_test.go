package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzValue holds the scanner to encoding/json: a document it reads whole
// is valid JSON, every valid document (within the depth limit) is read
// whole, the bytes it returns are the document without the spaces around
// it, and a string's raw contents unescape as encoding/json decodes them.
func FuzzValue(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,2,{"b":null}],"c":"x\"y"}`, `"caf\u00e9\ud83d\ude00"`, `-0.5e+10`, ` [true, false] `,
		`12345678901234567890`, `{"a":}`, `"\u0000"`, `[1,]`, `01`, `"\ud800"`, `nul`, `{"a" 1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		s := New(doc)
		v, err := s.Value(0)
		whole := err == nil && s.AtEnd()
		// encoding/json lets invalid UTF-8 through inside strings; JSON
		// text is UTF-8, and the scanner refuses it.
		if valid := json.Valid(doc) && utf8.Valid(doc); whole != valid {
			t.Fatalf("scanner read it whole: %v (err %v), valid UTF-8 JSON: %v, for %q", whole, err, valid, doc)
		}
		if !whole {
			return
		}
		if !bytes.Equal(v, bytes.TrimSpace(doc)) {
			t.Fatalf("value %q, want %q", v, bytes.TrimSpace(doc))
		}
		if v[0] == '"' {
			raw, esc, err := New(v).Str()
			if err != nil {
				t.Fatalf("Str after Value accepted %q: %v", v, err)
			}
			var want string
			if err := json.Unmarshal(v, &want); err != nil {
				t.Fatal(err)
			}
			got := string(raw)
			if esc {
				got = Unescape(raw)
			}
			// A lone surrogate escape reads as U+FFFD in both; otherwise
			// the text must agree exactly.
			if got != want {
				t.Fatalf("string %q reads %q, encoding/json %q", v, got, want)
			}
		}
	})
}
