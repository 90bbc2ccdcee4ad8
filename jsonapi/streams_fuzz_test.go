package jsonapi

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeStreams reads any body as each of the streams routes' bodies:
// no panic, a refusal is a BadRequest, and one let through was JSON with
// what its route requires: a registration's name, source queue and hash;
// a state read's and a cycle's query id and positive partition id; a
// cycle's state ops with keys and JSON values, its push items' queues, and
// its acknowledgement's transactionId and status.
func FuzzDecodeStreams(f *testing.F) {
	for _, body := range []string{
		`{"name":"q","source_queue":"s","config_hash":"h"}`, `{"name":"q","source_queue":"s","sink_queue":"o","config_hash":"h","reset":true}`,
		`{"name":"q","config_hash":"h"}`, `{"name":"q","source_queue":"s","config_hash":"h","reset":"yes"}`,
		`{"query_id":"01234567-89ab-cdef-0123-456789abcdef","partition_id":"17","keys":[],"key_prefix":"w\u001f","ripe_at_or_before":1000}`,
		`{"query_id":"01234567-89ab-cdef-0123-456789abcdef","partition_id":17,"keys":["a",1]}`,
		`{"query_id":"01234567-89ab-cdef-0123-456789abcdef","partition_id":"17","consumer_group":"g","state_ops":[{"type":"upsert","key":"k","value":{"a":1}},{"type":"delete","key":"k"}],` +
			`"push_items":[{"queue":"out","payload":{"v":1}}],"ack":{"transactionId":"t","leaseId":"01234567-89ab-cdef-0123-456789abcdef","status":"failed","count":3},"release_lease":false}`,
		`{"query_id":"x","partition_id":"17"}`, `{"query_id":"01234567-89ab-cdef-0123-456789abcdef","partition_id":"0"}`,
		`{"query_id":"01234567-89ab-cdef-0123-456789abcdef","partition_id":"1","state_ops":[{"type":"merge","key":"k"}]}`,
		`{"query_id":"01234567-89ab-cdef-0123-456789abcdef","partition_id":"1","ack":{"status":"completed"}}`, `{}`, `null`, `[]`,
	} {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if q, err := DecodeStreamQuery(body); !refused(t, err) {
			if !json.Valid(body) || q.Name == "" || CheckName("source_queue", q.Source, true) != nil || q.ConfigHash == "" {
				t.Fatalf("registration %+v let through from %q", q, body)
			}
		}
		if g, err := DecodeStreamStateGet(body); !refused(t, err) {
			if !json.Valid(body) || g.PartitionID <= 0 {
				t.Fatalf("state read %+v let through from %q", g, body)
			}
		}
		c, err := DecodeStreamCycle(body)
		if refused(t, err) {
			return
		}
		if !json.Valid(body) || c.PartitionID <= 0 || CheckName("consumer_group", c.Group, true) != nil {
			t.Fatalf("cycle %+v let through from %q", c, body)
		}
		for _, op := range c.Ops {
			if op.Key == "" || !op.Delete && !json.Valid(op.Value) {
				t.Fatalf("state op %+v let through from %q", op, body)
			}
		}
		for _, it := range c.Items {
			if CheckName("queue", it.Queue, true) != nil {
				t.Fatalf("push item %+v let through from %q", it, body)
			}
		}
		if a := c.Ack; a != nil && (a.TransactionID == "" || a.Status != "completed" && a.Status != "dlq") {
			t.Fatalf("ack %+v let through from %q", a, body)
		}
	})
}
