package jsonapi

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeRequeue reads any requeue body: no panic, a refusal is a
// BadRequest, and one let through was JSON, names a queue, and names a
// message by a positive partition id and a transactionId, or neither.
func FuzzDecodeRequeue(f *testing.F) {
	for _, body := range []string{
		`{"queue":"q"}`, `{"queue":"q","consumerGroup":"g"}`, `{"queue":"q","partitionId":"17","transactionId":"t"}`,
		`{"queue":"q","partitionId":17,"transactionId":"t"}`, `{"queue":"q","partitionId":"17"}`, `{"queue":"q","transactionId":"t"}`,
		`{"queue":"q","partitionId":"-1","transactionId":"t"}`, `{"queue":""}`, `{}`, `null`, `[]`, `{"queue":"q","consumerGroup":null}`,
	} {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DecodeRequeue(body)
		if refused(t, err) {
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if CheckName("queue", r.Queue, true) != nil {
			t.Fatalf("queue %q let through", r.Queue)
		}
		if (r.PartitionID != 0) != (r.TransactionID != "") || r.PartitionID < 0 {
			t.Fatalf("partition %d and transactionId %q let through", r.PartitionID, r.TransactionID)
		}
		if r.ConsumerGroup != "" && CheckName("consumerGroup", r.ConsumerGroup, true) != nil {
			t.Fatalf("group %q let through", r.ConsumerGroup)
		}
	})
}
