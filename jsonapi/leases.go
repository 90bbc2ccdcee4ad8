package jsonapi

import (
	"encoding/json"
	"strconv"
	"time"
)

// LeaseRequest is an extension of a lease: POST
// /api/v1/lease/:leaseId/extend with {"seconds"}, or the body of
// <prefix>.v1.lease, {"leaseId", "seconds"}.
type LeaseRequest struct {
	LeaseID string
	Lease   [16]byte // LeaseID parsed
	Seconds int      // 1..86400; 60 when the body names none
}

// DecodeLease reads a lease extension. leaseID is the path's; "" takes
// the body's leaseId (NATS). An empty body extends by 60 seconds.
func DecodeLease(leaseID string, body []byte) (LeaseRequest, error) {
	var w struct {
		LeaseID string `json:"leaseId"`
		Seconds *int   `json:"seconds"`
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &w); err != nil {
			return LeaseRequest{}, notJSON(err)
		}
	}
	r := LeaseRequest{LeaseID: leaseID, Seconds: 60}
	if r.LeaseID == "" {
		r.LeaseID = w.LeaseID
	}
	var err error
	if r.Lease, err = ParseUUID(r.LeaseID); err != nil {
		return r, Badf("leaseId must be a UUID, got %s", strconv.Quote(r.LeaseID))
	}
	if w.Seconds != nil {
		r.Seconds = *w.Seconds
	}
	if r.Seconds < 1 || r.Seconds > 86400 {
		return r, Badf("seconds must be 1..86400, got %d", r.Seconds)
	}
	return r, nil
}

// AppendLeaseAnswer appends the answer to a lease extension: [{"index":0,
// "leaseId","success","error","expiresAt"}], a failure when the lease is
// unknown or expired (ok false).
func AppendLeaseAnswer(out []byte, leaseID string, expires time.Time, ok bool) []byte {
	out = append(out, `[{"index":0,"leaseId":`...)
	out = AppendString(out, leaseID)
	if !ok {
		return append(out, `,"success":false,"error":"lease not found or expired","expiresAt":null}]`...)
	}
	out = append(out, `,"success":true,"error":null,"expiresAt":"`...)
	out = expires.UTC().AppendFormat(out, time.RFC3339Nano)
	return append(out, `"}]`...)
}
