package admin

import (
	"testing"
	"time"
)

// A queue's consumers: ids as strings, a lease and a last write null when
// there is none.
func TestEncodeQueueConsumers(t *testing.T) {
	exp := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	out := string(EncodeQueueConsumers(QueueConsumers{Queue: "q",
		Partitions: []ConsumerPartition{{ID: 7, Name: "p", LastOffset: 3, LastWrite: exp, Messages: 2}, {ID: 8, Name: "r"}},
		Groups: []ConsumerGroup{{Name: "g", Partitions: []GroupCursor{
			{Partition: "p", PartitionID: 7, Cursor: 1, Lag: 1, Popped: true, Lease: [16]byte{1}, Leased: true, Expires: exp, BatchSize: 2},
			{Partition: "r", PartitionID: 8}}}},
		Streams: []StreamQueryInfo{{ID: [16]byte{2}, Name: "totals", Sink: "out", ConfigHash: "h", Partitions: 2, Rows: 5, Bytes: 120, Registered: exp},
			{ID: [16]byte{3}, Name: "x", ConfigHash: "h"}}}))
	want := `{"queue":"q","partitions":[{"id":"7","name":"p","lastOffset":3,"lastWrite":"2026-01-02T03:04:05Z","messages":2},` +
		`{"id":"8","name":"r","lastOffset":0,"lastWrite":null,"messages":0}],"groups":[{"name":"g","partitions":[` +
		`{"partition":"p","partitionId":"7","cursor":1,"lag":1,"popped":true,"leaseId":"01000000-0000-0000-0000-000000000000","leaseExpiresAt":"2026-01-02T03:04:05Z","batchSize":2},` +
		`{"partition":"r","partitionId":"8","cursor":0,"lag":0,"popped":false,"leaseId":null,"leaseExpiresAt":null,"batchSize":0}]}],` +
		`"streams":[{"queryId":"02000000-0000-0000-0000-000000000000","name":"totals","sinkQueue":"out","configHash":"h","statePartitions":2,"stateRows":5,"stateBytes":120,"registeredAt":"2026-01-02T03:04:05Z","lastStateWrite":null},` +
		`{"queryId":"03000000-0000-0000-0000-000000000000","name":"x","sinkQueue":null,"configHash":"h","statePartitions":0,"stateRows":0,"stateBytes":0,"registeredAt":null,"lastStateWrite":null}]}`
	if out != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	if out := string(EncodeQueueConsumers(QueueConsumers{Queue: "q"})); out != `{"queue":"q","partitions":[],"groups":[],"streams":[]}` {
		t.Fatalf("empty: %s", out)
	}
}
