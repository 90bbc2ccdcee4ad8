package jsonapi

import (
	"testing"
)

// Lease extension: POST /api/v1/lease/:leaseId/extend (the lease named by
// the path) and <prefix>.v1.lease (named by the body).

func TestDecodeLease(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		path, body string
		want       LeaseRequest
		err        string
	}{
		{path: uuidAText, body: ``, want: LeaseRequest{LeaseID: uuidAText, Lease: uuidA, Seconds: 60}},
		{path: uuidAText, body: `{}`, want: LeaseRequest{LeaseID: uuidAText, Lease: uuidA, Seconds: 60}},
		{path: uuidAText, body: `null`, want: LeaseRequest{LeaseID: uuidAText, Lease: uuidA, Seconds: 60}},
		{path: uuidAText, body: `{"seconds":null}`, want: LeaseRequest{LeaseID: uuidAText, Lease: uuidA, Seconds: 60}},
		{path: uuidAText, body: `{"seconds":1}`, want: LeaseRequest{LeaseID: uuidAText, Lease: uuidA, Seconds: 1}},
		{path: uuidAText, body: `{"seconds":86400}`, want: LeaseRequest{LeaseID: uuidAText, Lease: uuidA, Seconds: 86400}},
		{path: uuidAText, body: `{"seconds":0}`, err: "seconds must be 1..86400, got 0"},
		{path: uuidAText, body: `{"seconds":-60}`, err: "seconds must be 1..86400, got -60"},
		{path: uuidAText, body: `{"seconds":86401}`, err: "seconds must be 1..86400, got 86401"},
		// The path names the lease: the body's leaseId does not overrule it.
		{path: uuidAText, body: `{"leaseId":"` + uuidBText + `","seconds":30}`, want: LeaseRequest{LeaseID: uuidAText, Lease: uuidA, Seconds: 30}},
		// Over NATS the body names it.
		{body: `{"leaseId":"` + uuidBText + `","seconds":30}`, want: LeaseRequest{LeaseID: uuidBText, Lease: uuidB, Seconds: 30}},
		{body: `{"leaseId":"FFEEDDCCBBAA99887766554433221100"}`, want: LeaseRequest{LeaseID: "FFEEDDCCBBAA99887766554433221100", Lease: uuidB, Seconds: 60}},
		{body: `{"seconds":30}`, err: `leaseId must be a UUID, got ""`},
		{body: ``, err: `leaseId must be a UUID, got ""`},
		{body: `{"leaseId":"lease\n1"}`, err: `leaseId must be a UUID, got "lease\n1"`},
		{path: "not-a-lease", body: `{"seconds":30}`, err: `leaseId must be a UUID, got "not-a-lease"`},
		{path: "x", body: `{"seconds":0}`, err: `leaseId must be a UUID, got "x"`}, // the lease is checked first
		{path: uuidAText, body: `{"seconds":"60"}`, err: "body is not JSON: json: cannot unmarshal string into Go struct field .seconds of type int"},
		{path: uuidAText, body: `{"seconds":1.5}`, err: "body is not JSON: json: cannot unmarshal number 1.5 into Go struct field .seconds of type int"},
		{path: uuidAText, body: `{"seconds":99999999999999999999}`, err: "body is not JSON: json: cannot unmarshal number 99999999999999999999 into Go struct field .seconds of type int"},
		{path: uuidAText, body: `{"leaseId":5}`, err: "body is not JSON: json: cannot unmarshal number into Go struct field .leaseId of type string"},
		{path: uuidAText, body: `seconds=30`, err: "body is not JSON: invalid character 's' looking for beginning of value"},
	} {
		got, err := DecodeLease(c.path, []byte(c.body))
		wantBad(t, err, c.err)
		if c.err == "" && got != c.want {
			t.Errorf("%q %s: got %+v, want %+v", c.path, c.body, got, c.want)
		}
	}
}

func TestAppendLeaseAnswer(t *testing.T) {
	t.Parallel()
	golden(t, AppendLeaseAnswer(nil, uuidAText, at, true),
		`[{"index":0,"leaseId":"01234567-89ab-cdef-0123-456789abcdef","success":true,"error":null,"expiresAt":"2026-11-30T12:00:00.123456Z"}]`)
	golden(t, AppendLeaseAnswer(nil, uuidAText, at, false),
		`[{"index":0,"leaseId":"01234567-89ab-cdef-0123-456789abcdef","success":false,"error":"lease not found or expired","expiresAt":null}]`)
	golden(t, AppendLeaseAnswer([]byte{}, nasty, atWhole, true),
		`[{"index":0,"leaseId":`+nastyJSON+`,"success":true,"error":null,"expiresAt":"2026-01-02T03:04:05Z"}]`)
}
