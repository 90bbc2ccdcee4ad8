package jsonapi

import (
	"strings"
	"testing"
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

// The requeue answer: one entry per message, groups never null.
func TestAppendRequeued(t *testing.T) {
	out := string(AppendRequeued(nil, []Requeued{{TransactionID: "t", NewTransactionID: "n", PartitionID: 7, Partition: "p", Offset: 4, Already: true}}, true))
	want := `{"requeued":1,"more":true,"messages":[{"transactionId":"t","newTransactionId":"n","partitionId":"7","partition":"p","offset":4,"consumerGroups":[],"alreadyRequeued":true}]}`
	if out != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
}
