package jsonapi

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// FuzzDecodeAck reads any body as both HTTP routes and as <prefix>.v1.ack:
// none panics, every refusal is a BadRequest, every acknowledgement read
// has what the consumer API needs (a transactionId, a partition id, a known
// status, a group that follows the name rules, a lease only as a UUID),
// and <prefix>.v1.ack reads each body exactly as the route it stands for.
func FuzzDecodeAck(f *testing.F) {
	for _, c := range ackBodies {
		f.Add([]byte(c.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, batch := range []bool{false, true} {
			acks, err := DecodeAck(body, batch)
			if err != nil {
				var bad *BadRequest
				if !errors.As(err, &bad) {
					t.Fatalf("batch %v: error of the wrong kind: %v", batch, err)
				}
				continue
			}
			if !json.Valid(body) {
				t.Fatalf("batch %v: accepted invalid JSON %q", batch, body)
			}
			if !batch && len(acks) != 1 {
				t.Fatalf("one acknowledgement read as %d", len(acks))
			}
			for i, a := range acks {
				checkAck(t, i, a)
			}
		}
		batch := ackIsBatch(body)
		want, wantErr := DecodeAck(body, batch)
		got, err := DecodeAnyAck(body)
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Fatalf("DecodeAnyAck says %v, DecodeAck (batch %v) %v", err, batch, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("DecodeAnyAck reads %+v, DecodeAck (batch %v) %+v", got, batch, want)
		}
	})
}

// checkAck holds one decoded acknowledgement to the rules.
func checkAck(t *testing.T, i int, a Ack) {
	t.Helper()
	if a.TransactionID == "" {
		t.Fatalf("ack %d without a transactionId", i)
	}
	if a.PartitionID <= 0 {
		t.Fatalf("ack %d: partitionId %d", i, a.PartitionID)
	}
	switch a.Status {
	case "completed", "success", "failed", "dlq", "retry":
	default:
		t.Fatalf("ack %d: status %q", i, a.Status)
	}
	if err := CheckName("consumerGroup", a.ConsumerGroup, true); err != nil {
		t.Fatalf("ack %d: %v", i, err)
	}
	if (a.LeaseID == "") != (a.Lease == nil) {
		t.Fatalf("ack %d: leaseId %q, lease %v", i, a.LeaseID, a.Lease)
	}
	if a.Lease != nil {
		if id, err := ParseUUID(a.LeaseID); err != nil || id != *a.Lease {
			t.Fatalf("ack %d: leaseId %q read as %x", i, a.LeaseID, *a.Lease)
		}
	}
}
