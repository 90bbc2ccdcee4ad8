package jsonapi

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzDecodePush holds the decoder to encoding/json: it accepts only valid
// JSON, and what it accepts it reads as encoding/json does (names unescaped,
// payloads the exact bytes of the value).
func FuzzDecodePush(f *testing.F) {
	for _, s := range []string{
		`{"items":[]}`,
		`{"items":[{"queue":"q","partition":"p","payload":{"a":[1,2,{"b":null}]},"transactionId":"t","traceId":""}]}`,
		`{"items":[{"queue":"caf\u00e9\ud83d\ude00","payload":"x\"y"},{"queue":"q2"}],"other":1}`,
		`{"items":[{"queue":"q","payload":-0.5e+10}]}`,
		`{"items":[{"queue":"q","partition":null,"payload":12345678901234567890}]}`,
		`{"items":[{"queue":"q","queue":"r"}]}`,
		`{"items":[1]}`, `[]`, `{"items":[{"queue":"\u0000"}]}`, `{"items":[{"queue":"q"}] `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		items, err := DecodePush(body)
		if refused(t, err) {
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		var ref struct {
			Items []map[string]json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(body, &ref); err != nil {
			t.Fatalf("encoding/json rejects what the decoder accepted: %v", err)
		}
		if len(ref.Items) != len(items) {
			t.Fatalf("%d items, encoding/json sees %d", len(items), len(ref.Items))
		}
		for i, it := range items {
			raw := ref.Items[i]
			var q string
			if err := json.Unmarshal(raw["queue"], &q); err != nil || q != it.Queue {
				t.Fatalf("item %d queue %q, encoding/json %q (%v)", i, it.Queue, q, err)
			}
			want := []byte("null")
			if p, ok := raw["payload"]; ok {
				want = p
			}
			if !bytes.Equal(it.Payload, bytes.TrimSpace(want)) {
				t.Fatalf("item %d payload %q, want %q", i, it.Payload, want)
			}
			if _, ok := raw["payload"]; ok && !bytes.Contains(body, it.Payload) {
				t.Fatal("payload is not a slice of the body")
			}
		}
	})
}
