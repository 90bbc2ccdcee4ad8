package jsonapi

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeLease reads any lease extension, with the lease in the path or
// (path "") in the body: no panic, a refusal is a BadRequest, and one let
// through names a lease by a UUID (the path's when it names one) and 1..86400
// seconds (60 unless the body says).
func FuzzDecodeLease(f *testing.F) {
	for _, c := range []struct{ path, body string }{
		{uuidAText, ``}, {uuidAText, `{"seconds":86400}`}, {"", `{"leaseId":"` + uuidBText + `","seconds":1}`},
		{uuidAText, `{"leaseId":"` + uuidBText + `"}`}, {"x", `{}`}, {"", `{"seconds":0}`}, {uuidAText, `{"seconds":1.5}`},
		{uuidAText, `null`}, {uuidAText, `[]`}, {"0123456789abcdef0123456789abcdef", `{"seconds":null}`},
	} {
		f.Add(c.path, []byte(c.body))
	}
	f.Fuzz(func(t *testing.T, path string, body []byte) {
		r, err := DecodeLease(path, body)
		if refused(t, err) {
			return
		}
		if len(body) > 0 && !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if path != "" && r.LeaseID != path {
			t.Fatalf("path %q, lease %q", path, r.LeaseID)
		}
		if id, err := ParseUUID(r.LeaseID); err != nil || id != r.Lease {
			t.Fatalf("lease %q read as %x", r.LeaseID, r.Lease)
		}
		if r.Seconds < 1 || r.Seconds > 86400 {
			t.Fatalf("seconds %d let through", r.Seconds)
		}
		var sent struct {
			Seconds *int `json:"seconds"`
		}
		if len(body) > 0 && json.Unmarshal(body, &sent) == nil && sent.Seconds == nil && r.Seconds != 60 {
			t.Fatalf("no seconds sent, %d taken", r.Seconds)
		}
	})
}
