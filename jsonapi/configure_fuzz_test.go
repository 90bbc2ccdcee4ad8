package jsonapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzDecodeConfigure reads any configure body: no panic, a refusal is a
// BadRequest, a body let through names a queue that follows the name rules,
// a namespace and task that are the queue's, no negative window, and options
// that, stored and broadcast as queue.changed, read back as the same
// settings on every peer.
func FuzzDecodeConfigure(f *testing.F) {
	for _, s := range []string{
		`{"queue":"orders.eu","namespace":"orders","task":"eu","options":{"encryptionEnabled":true,"dedupWindowSeconds":60,"retentionSeconds":0,"leaseTime":30}}`,
		`{"queue":"q","options":{"encryptionenabled":false,"Retentionseconds":"x","dedupWindowSeconds":-1}}`,
		`{"queue":"orders","task":"eu"}`, `{"queue":"a.b.c","namespace":"a","task":"b"}`, `{"queue":""}`, `{}`, `[]`, `{"queue":"q","options":null}`,
		`{"queue":"q","options":{"x":{"<":"\u2028"},"y":[1.5e300,-0]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DecodeConfigure(body)
		if refused(t, err) {
			return
		}
		if err := CheckName("queue", r.Queue, true); err != nil {
			t.Fatalf("queue let through: %v", err)
		}
		var sent struct{ Namespace, Task string }
		if err := json.Unmarshal(body, &sent); err == nil {
			parts := strings.SplitN(r.Queue, ".", 3)
			if sent.Namespace != "" && sent.Namespace != parts[0] {
				t.Fatalf("namespace %q let through for queue %q", sent.Namespace, r.Queue)
			}
			if sent.Task != "" && (len(parts) < 2 || sent.Task != parts[1]) {
				t.Fatalf("task %q let through for queue %q", sent.Task, r.Queue)
			}
		}
		if (r.DedupWindowSeconds != nil && *r.DedupWindowSeconds < 0) || (r.RetentionSeconds != nil && *r.RetentionSeconds < 0) {
			t.Fatalf("a negative window let through: %+v", r)
		}
		for k := range r.Other {
			if slices.Contains(ActedOn, k) {
				t.Fatalf("acted-on option %q kept as sent", k)
			}
		}

		// Stored and broadcast, as queues.Settings does.
		c := QueueConfigured{Configured: true, Queue: r.Queue, Options: QueueOptions{Other: r.Other}}
		if r.EncryptionEnabled != nil {
			c.Options.EncryptionEnabled = *r.EncryptionEnabled
		}
		if r.DedupWindowSeconds != nil {
			c.Options.DedupWindowSeconds = *r.DedupWindowSeconds
		}
		if r.RetentionSeconds != nil {
			c.Options.RetentionSeconds = *r.RetentionSeconds
		}
		out, err := AppendQueueConfigured(nil, &c)
		if err != nil {
			t.Fatalf("options taken do not encode: %v", err)
		}
		back, err := DecodeQueueConfigured(out)
		if err != nil {
			t.Fatalf("the broadcast %s does not read back: %v", out, err)
		}
		if back.Queue != c.Queue || back.Options.EncryptionEnabled != c.Options.EncryptionEnabled ||
			back.Options.DedupWindowSeconds != c.Options.DedupWindowSeconds || back.Options.RetentionSeconds != c.Options.RetentionSeconds {
			t.Fatalf("the broadcast %s reads back as %+v, not %+v", out, back, c)
		}
		if len(back.Options.Other) != len(r.Other) {
			t.Fatalf("options kept as sent %v read back as %v", r.Other, back.Options.Other)
		}
		for k, v := range r.Other {
			// Numbers as their text: JSON's numbers are not float64's (1e700).
			want, wantErr := decodeNumbers(v)
			got, gotErr := decodeNumbers(back.Options.Other[k])
			if wantErr != nil || gotErr != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("option %q: %s read back as %s", k, v, back.Options.Other[k])
			}
		}
	})
}

// decodeNumbers decodes JSON keeping numbers as json.Number.
func decodeNumbers(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	return v, d.Decode(&v)
}
