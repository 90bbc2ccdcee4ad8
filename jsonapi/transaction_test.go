package jsonapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The bodies Queen's clients send (TransactionBuilder.js, transaction_builder.py)
// and Queen's flat form decode into flattened operations.
func TestDecodeTransaction(t *testing.T) {
	body := `{"operations":[
		{"type":"push","items":[{"queue":"b","partition":"p1","payload":{"v":2}},{"queue":"b","payload":null,"transactionId":"t2","traceId":"tr"}]},
		{"type":"ack","transactionId":"t-1","partitionId":"17","status":"completed","consumerGroup":"g"},
		{"type":"push","queue":"c","data":[1,2]},
		{"type":"ack","transactionId":"t-2","partitionId":18,"status":"failed","error":"boom","leaseId":"` + uuidAText + `"},
		{"type":"push","items":[]},
		{"type":"push","items":[{"queue":"d","partition":"","data":"x","payload":"y"}]}],
		"requiredLeases":["` + uuidAText + `", 5]}`
	ops, err := DecodeTransaction([]byte(body), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []TxnOp{
		{Push: true, Item: Item{Queue: "b", Partition: "p1", Payload: []byte(`{"v":2}`)}},
		{Push: true, Item: Item{Queue: "b", Partition: DefaultPartition, Payload: []byte(`null`), TransactionID: "t2", TraceID: "tr"}},
		{Ack: Ack{TransactionID: "t-1", PartitionID: 17, Status: "completed", ConsumerGroup: "g"}},
		{Push: true, Item: Item{Queue: "c", Partition: DefaultPartition, Payload: []byte(`[1,2]`)}},
		{Ack: Ack{TransactionID: "t-2", PartitionID: 18, Status: "failed", ConsumerGroup: QueueModeGroup, Error: "boom", LeaseID: uuidAText, Lease: &uuidA}},
		{Push: true, Item: Item{Queue: "d", Partition: DefaultPartition, Payload: []byte(`"y"`)}},
	}
	if !reflect.DeepEqual(ops, want) {
		t.Fatalf("got  %+v\nwant %+v", ops, want)
	}
	for _, op := range ops {
		if op.Push && !bytes.Contains([]byte(body), op.Item.Payload) {
			t.Fatal("a payload is not a slice of the body")
		}
	}
}

// Every refusal names the operation (its index after flattening) and the
// field; Queen's two top-level messages are kept.
func TestDecodeTransactionRefuses(t *testing.T) {
	for _, c := range []struct{ body, err string }{
		{`{}`, "operations array required"},
		{`[]`, "operations array required"},
		{`{"operations":null}`, "operations array required"},
		{`{"operations":{}}`, "operations array required"},
		{`{"operations":[]}`, "operations array cannot be empty"},
		{`{"operations":[1]}`, "operations[0] must be an object"},
		{`{"operations":[{"type":"pop"}]}`, `operations[0]: unknown operation type "pop"`},
		{`{"operations":[{"queue":"q"}]}`, "operations[0]: unknown operation type"},
		{`{"operations":[{"type":5}]}`, "operations[0].type must be a string"},
		{`{"operations":[{"type":"push","items":[{"queue":"a"},{"queue":"b"}]},{"type":"push","items":[{"partition":"p"}]}]}`, "operations[2].queue is required"},
		{`{"operations":[{"type":"push","items":[{"queue":"a"}]},{"type":"push","items":[{"queue":"a","transactionId":7}]}]}`, "operations[1].transactionId must be a string"},
		{`{"operations":[{"type":"push","items":{}}]}`, "operations[0].items must be an array"},
		{`{"operations":[{"type":"push","items":[3]}]}`, "operations[0] must be an object (a push item)"},
		{`{"operations":[{"type":"push","queue":"` + strings.Repeat("q", 256) + `"}]}`, "operations[0].queue must be 1..255 bytes, got 256"},
		{`{"operations":[{"type":"push","queue":"a"},{"type":"ack","partitionId":"1"}]}`, "operations[1].transactionId is required"},
		{`{"operations":[{"type":"ack","transactionId":"t"}]}`, "operations[0].partitionId is required"},
		{`{"operations":[{"type":"ack","transactionId":"t","partitionId":"x"}]}`, `operations[0].partitionId must be a partition id (a positive integer), got "x"`},
		{`{"operations":[{"type":"ack","transactionId":"t","partitionId":1,"status":"retry"}]}`, `operations[0].status must be completed, success, failed or dlq in a transaction, got "retry"`},
		{`{"operations":[{"type":"ack","transactionId":"t","partitionId":1,"status":"done"}]}`, `operations[0].status must be completed, success, failed or dlq in a transaction, got "done"`},
		{`{"operations":[{"type":"ack","transactionId":"t","partitionId":1,"leaseId":"l"}]}`, `operations[0].leaseId must be a UUID, got "l"`},
		{`{"operations":[{"type":"ack","transactionId":"t","partitionId":1,"consumerGroup":3}]}`, "operations[0].consumerGroup must be a string"},
		{`{"operations":[{"type":"ack","transactionId":"t","partitionId":1}]`, "body is not JSON"},
		{`{"operations":[{"type":"ack","transactionId":"t","partitionId":1}]} x`, "body is not JSON"},
	} {
		_, err := DecodeTransaction([]byte(c.body), 0)
		var bad *BadRequest
		if err == nil || !errors.As(err, &bad) || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want %q", c.body, err, c.err)
		}
	}
}

// The bound counts operations after flattening.
func TestDecodeTransactionBound(t *testing.T) {
	body := []byte(`{"operations":[{"type":"push","items":[{"queue":"a"},{"queue":"a"}]},{"type":"ack","transactionId":"t","partitionId":1}]}`)
	if _, err := DecodeTransaction(body, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeTransaction(body, 2); err == nil || !strings.Contains(err.Error(), "more than 2 operations") {
		t.Fatalf("over the bound: %v", err)
	}
}

// The answers, as Queen's clients read them (success, error) and with the
// bridge's additions.
func TestTxnAnswers(t *testing.T) {
	at := time.Date(2026, 11, 29, 22, 41, 7, 123456000, time.UTC)
	out := AppendTxnAnswer(nil, uuidA, []TxnResult{
		{Push: true, TransactionID: "t\"1", MessageID: uuidA, PartitionID: 17, Queue: "b", Partition: "p1", Offset: 118, CreatedAt: at},
		{TransactionID: "t-1", DLQ: true},
	})
	want := `{"transactionId":"` + uuidAText + `","success":true,"results":[` +
		`{"index":0,"type":"push","success":true,"transactionId":"t\"1","messageId":"` + uuidAText + `","partitionId":"17","queueName":"b","partition":"p1","offset":118,"createdAt":"2026-11-29T22:41:07.123456Z"},` +
		`{"index":1,"type":"ack","success":true,"transactionId":"t-1","error":null,"dlq":true}]}`
	if string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	fail := AppendTxnFailure(nil, uuidA, "ACK operation failed: Message not found (operations[2]: x)")
	var v map[string]any
	if err := json.Unmarshal(fail, &v); err != nil || v["success"] != false || v["error"] != "ACK operation failed: Message not found (operations[2]: x)" || len(v["results"].([]any)) != 0 {
		t.Fatalf("failure %s: %v", fail, err)
	}
}

// FuzzDecodeTransaction: the decoder accepts only valid JSON, refuses with
// a BadRequest only, and its payloads are slices of the body.
func FuzzDecodeTransaction(f *testing.F) {
	for _, s := range []string{
		`{"operations":[{"type":"push","items":[{"queue":"q","payload":{"a":1}}]},{"type":"ack","transactionId":"t","partitionId":"1"}]}`,
		`{"operations":[{"type":"push","queue":"q","data":null}],"requiredLeases":[]}`,
		`{"operations":[{"type":"ack","transactionId":"t","partitionId":1,"status":"dlq","leaseId":"` + uuidAText + `"}]}`,
		`{"operations":[]}`, `{"operations":[{"type":"x"}]}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ops, err := DecodeTransaction(body, 100)
		if refused(t, err) {
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if len(ops) > 100 {
			t.Fatalf("%d operations past the bound", len(ops))
		}
		for _, op := range ops {
			if op.Push && !bytes.Contains(body, op.Item.Payload) && string(op.Item.Payload) != "null" {
				t.Fatalf("payload %q is not a slice of the body", op.Item.Payload)
			}
			if !op.Push && (op.Ack.TransactionID == "" || op.Ack.PartitionID <= 0) {
				t.Fatalf("an ack without its fields: %+v", op.Ack)
			}
		}
	})
}
