package jsonapi

import (
	"math"
	"strings"
	"testing"
	"time"
)

// A requeue body names a queue, maybe a group, and a message by partition
// id and transactionId together or not at all; a refusal names the field.
func TestDecodeRequeue(t *testing.T) {
	for _, c := range []struct {
		body string
		want RequeueRequest
		bad  string // a word of the refusal
	}{
		{body: `{"queue":"q"}`, want: RequeueRequest{Queue: "q"}},
		{body: `{"queue":"q","consumerGroup":"g"}`, want: RequeueRequest{Queue: "q", ConsumerGroup: "g"}},
		{body: `{"queue":"q","partitionId":"17","transactionId":"t"}`, want: RequeueRequest{Queue: "q", PartitionID: 17, TransactionID: "t"}},
		{body: `{"queue":"q","partitionId":17,"transactionId":"t","consumerGroup":"g"}`, want: RequeueRequest{Queue: "q", ConsumerGroup: "g", PartitionID: 17, TransactionID: "t"}},
		{body: `{"queue":"q","partitionId":null,"transactionId":null}`, want: RequeueRequest{Queue: "q"}}, // null is absent
		{body: `{"queue":"q","partitionId":null}`, want: RequeueRequest{Queue: "q"}},
		{body: `{}`, bad: "queue"},
		{body: `{"queue":""}`, bad: "queue"},
		{body: `{"queue":7}`, bad: "requeue body"},
		{body: `{"queue":"q","consumerGroup":""}`, bad: "consumerGroup"},
		{body: `{"queue":"q","consumerGroup":"a\u0001"}`, bad: "consumerGroup"},
		{body: `{"queue":"q","partitionId":"17"}`, bad: "transactionId"},
		{body: `{"queue":"q","transactionId":"t"}`, bad: "partitionId"},
		{body: `{"queue":"q","partitionId":"x","transactionId":"t"}`, bad: "partitionId"},
		{body: `{"queue":"q","partitionId":"0","transactionId":"t"}`, bad: "partitionId"},
		{body: `{"queue":"q","partitionId":"1","transactionId":""}`, bad: "transactionId"},
		{body: `[]`, bad: "requeue body"},
		{body: ``, bad: "requeue body"},
	} {
		got, err := DecodeRequeue([]byte(c.body))
		if c.bad != "" {
			if err == nil || !strings.Contains(err.Error(), c.bad) {
				t.Errorf("%s: %+v %v, want a refusal naming %s", c.body, got, err, c.bad)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %+v %v, want %+v", c.body, got, err, c.want)
		}
	}
}

// The overview's times are UTC, its lists never null, and a figure JSON
// cannot carry is 0.
func TestEncodeBridgeOverview(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("x", 3600))
	out := string(EncodeBridgeOverview(BridgeOverview{Bridge: "b", Time: at, FlushMs: math.NaN(),
		History: []OverviewPoint{{Time: at, PushedPerSecond: math.Inf(1), SegmentsPerCommit: 2.5}}}))
	want := `{"bridge":"b","time":"2026-01-02T02:04:05.0000006Z","maintenance":false,"popMaintenance":false,` +
		`"spool":{"records":0,"bytes":0,"healthy":false},"bundlesInFlight":0,"inFlightLimit":0,"flushMs":0,"bundleLatencyMs":0,` +
		`"totals":{"pushed":0,"consumed":0,"commits":0,"segments":0},` +
		`"history":[{"time":"2026-01-02T02:04:05.0000006Z","pushedPerSecond":0,"consumedPerSecond":0,"segmentsPerCommit":2.5,"flushMs":0}],` +
		`"buckets":0,"bridges":[]}`
	if out != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	if out := string(EncodeBridgeOverview(BridgeOverview{})); !strings.Contains(out, `"history":[]`) {
		t.Fatalf("no history: %s", out)
	}
}

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

// The requeue answer: one entry per message, groups never null.
func TestRequeueAnswer(t *testing.T) {
	out := string(RequeueAnswer([]Requeued{{TransactionID: "t", NewTransactionID: "n", PartitionID: 7, Partition: "p", Offset: 4, Already: true}}, true))
	want := `{"requeued":1,"more":true,"messages":[{"transactionId":"t","newTransactionId":"n","partitionId":"7","partition":"p","offset":4,"consumerGroups":[],"alreadyRequeued":true}]}`
	if out != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
}
