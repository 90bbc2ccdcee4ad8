package jsonapi

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// Acknowledgements: POST /api/v1/ack (one), /api/v1/ack/batch (many), and
// <prefix>.v1.ack, which takes either and must read each as HTTP does.

// ackBodies are the acknowledgement bodies of the tests: each with the batch
// flag of its route, and what DecodeAck makes of it.
var ackBodies = []struct {
	body  string
	batch bool
	want  []Ack
	err   string
}{
	// One acknowledgement.
	{body: `{"transactionId":"t-1","partitionId":"17"}`,
		want: []Ack{{TransactionID: "t-1", PartitionID: 17, Status: "completed", ConsumerGroup: QueueModeGroup}}},
	{body: `{"transactionId":"t-1","partitionId":17,"status":"failed","consumerGroup":"billing","leaseId":"` + uuidAText + `","error":"boom"}`,
		want: []Ack{{TransactionID: "t-1", PartitionID: 17, Status: "failed", ConsumerGroup: "billing", LeaseID: uuidAText, Error: "boom", Lease: &uuidA}}},
	{body: `{"transactionId":"t","partitionId":" 9223372036854775807 ","status":"success","leaseId":"","error":null,"consumerGroup":""}`,
		want: []Ack{{TransactionID: "t", PartitionID: 9223372036854775807, Status: "success", ConsumerGroup: QueueModeGroup}}},
	{body: `{"transactionId":"t","partitionId":"\u0031","status":"dlq","leaseId":"0123456789ABCDEF0123456789abcdef"}`,
		want: []Ack{{TransactionID: "t", PartitionID: 1, Status: "dlq", ConsumerGroup: QueueModeGroup, LeaseID: "0123456789ABCDEF0123456789abcdef", Lease: &uuidA}}},
	{body: `{"transactionId":"t","partitionId":2,"status":"retry","leaseId":null,"acknowledgments":"ignored by the single route"}`,
		want: []Ack{{TransactionID: "t", PartitionID: 2, Status: "retry", ConsumerGroup: QueueModeGroup}}},
	{body: `{}`, err: "transactionId is required"},
	{body: `null`, err: "transactionId is required"},
	{body: `{"transactionId":"","partitionId":1}`, err: "transactionId is required"},
	{body: `{"transactionId":null,"partitionId":1}`, err: "transactionId is required"},
	{body: `{"transactionId":"t"}`, err: "partitionId is required"},
	{body: `{"transactionId":"t","partitionId":null}`, err: "partitionId is required"},
	{body: `{"transactionId":"t","partitionId":"abc"}`, err: `partitionId must be a partition id (a positive integer), got "abc"`},
	{body: `{"transactionId":"t","partitionId":""}`, err: `partitionId must be a partition id (a positive integer), got ""`},
	{body: `{"transactionId":"t","partitionId":0}`, err: `partitionId must be a partition id (a positive integer), got 0`},
	{body: `{"transactionId":"t","partitionId":"0"}`, err: `partitionId must be a partition id (a positive integer), got "0"`},
	{body: `{"transactionId":"t","partitionId":-3}`, err: `partitionId must be a partition id (a positive integer), got -3`},
	{body: `{"transactionId":"t","partitionId":1.5}`, err: `partitionId must be a partition id (a positive integer), got 1.5`},
	{body: `{"transactionId":"t","partitionId":1e3}`, err: `partitionId must be a partition id (a positive integer), got 1e3`},
	{body: `{"transactionId":"t","partitionId":9223372036854775808}`, err: `partitionId must be a partition id (a positive integer), got 9223372036854775808`},
	{body: `{"transactionId":"t","partitionId":true}`, err: `partitionId must be a partition id (a positive integer), got true`},
	{body: `{"transactionId":"t","partitionId":[1]}`, err: `partitionId must be a partition id (a positive integer), got [1]`},
	{body: `{"transactionId":"t","partitionId":1,"status":"done"}`, err: `status must be completed, success, failed, dlq or retry, got "done"`},
	{body: `{"transactionId":"t","partitionId":1,"status":"COMPLETED"}`, err: `status must be completed, success, failed, dlq or retry, got "COMPLETED"`},
	{body: `{"transactionId":"t","partitionId":1,"consumerGroup":"` + strings.Repeat("g", 256) + `"}`, err: "consumerGroup must be 1..255 bytes, got 256"},
	{body: `{"transactionId":"t","partitionId":1,"consumerGroup":"g\t"}`, err: "consumerGroup must not contain control characters"},
	{body: `{"transactionId":"t","partitionId":1,"leaseId":"lease-1"}`, err: `leaseId must be a UUID, got "lease-1"`},
	{body: `{"transactionId":5,"partitionId":1}`, err: "body is not JSON: json: cannot unmarshal number into Go struct field ackWire.transactionId of type string"},
	{body: `[]`, err: "body is not JSON: json: cannot unmarshal array into Go value of type jsonapi.ackWire"},
	{body: `"t-1"`, err: "body is not JSON: json: cannot unmarshal string into Go value of type jsonapi.ackWire"},
	{body: ``, err: "body is not JSON: unexpected end of JSON input"},
	{body: `{"transactionId":"t",}`, err: "body is not JSON: invalid character '}' looking for beginning of object key string"},

	// A batch.
	{batch: true, body: `{"acknowledgments":[]}`, want: []Ack{}},
	{batch: true, body: `{"acknowledgments":[{"transactionId":"a","partitionId":"1"},{"transactionId":"b","partitionId":2,"consumerGroup":"audit","status":"failed","error":"bad"}],"consumerGroup":"billing"}`,
		want: []Ack{{TransactionID: "a", PartitionID: 1, Status: "completed", ConsumerGroup: "billing"},
			{TransactionID: "b", PartitionID: 2, Status: "failed", ConsumerGroup: "audit", Error: "bad"}}},
	{batch: true, body: `{"acknowledgments":[{"transactionId":"a","partitionId":1,"leaseId":"` + uuidBText + `"}]}`,
		want: []Ack{{TransactionID: "a", PartitionID: 1, Status: "completed", ConsumerGroup: QueueModeGroup, LeaseID: uuidBText, Lease: &uuidB}}},
	{batch: true, body: `{"acknowledgments":[{"transactionId":"a","partitionId":1,"consumerGroup":""}],"consumerGroup":""}`,
		want: []Ack{{TransactionID: "a", PartitionID: 1, Status: "completed", ConsumerGroup: QueueModeGroup}}},
	// The batch route reads only acknowledgments and consumerGroup.
	{batch: true, body: `{"acknowledgments":[{"transactionId":"a","partitionId":1}],"transactionId":5,"partitionId":{},"status":7,"leaseId":[],"error":true}`,
		want: []Ack{{TransactionID: "a", PartitionID: 1, Status: "completed", ConsumerGroup: QueueModeGroup}}},
	{batch: true, body: `{}`, err: "acknowledgments must be an array"},
	{batch: true, body: `{"transactionId":"t","partitionId":1}`, err: "acknowledgments must be an array"},
	{batch: true, body: `{"acknowledgments":null,"consumerGroup":"g"}`, err: "acknowledgments must be an array"},
	{batch: true, body: `null`, err: "acknowledgments must be an array"},
	{batch: true, body: `{"acknowledgments":{}}`, err: "body is not JSON: json: cannot unmarshal object into Go struct field .acknowledgments of type []jsonapi.ackWire"},
	{batch: true, body: `{"acknowledgments":[1]}`, err: "body is not JSON: json: cannot unmarshal number into Go struct field .acknowledgments of type jsonapi.ackWire"},
	{batch: true, body: `{"acknowledgments":[],"consumerGroup":5}`, err: "body is not JSON: json: cannot unmarshal number into Go struct field .consumerGroup of type string"},
	{batch: true, body: `{"acknowledgments":[{"transactionId":"a","partitionId":1},{"partitionId":2}]}`, err: "acknowledgments[1].transactionId is required"},
	{batch: true, body: `{"acknowledgments":[{"transactionId":"a"}]}`, err: "acknowledgments[0].partitionId is required"},
	{batch: true, body: `{"acknowledgments":[{"transactionId":"a","partitionId":"x1"}]}`, err: `acknowledgments[0].partitionId must be a partition id (a positive integer), got "x1"`},
	{batch: true, body: `{"acknowledgments":[{"transactionId":"a","partitionId":1,"status":"ok"}]}`, err: `acknowledgments[0].status must be completed, success, failed, dlq or retry, got "ok"`},
	{batch: true, body: `{"acknowledgments":[{"transactionId":"a","partitionId":1,"leaseId":"x"}]}`, err: `acknowledgments[0].leaseId must be a UUID, got "x"`},
	{batch: true, body: `{"acknowledgments":[{"transactionId":"a","partitionId":1}],"consumerGroup":"` + strings.Repeat("g", 256) + `"}`,
		err: "acknowledgments[0].consumerGroup must be 1..255 bytes, got 256"},
	{batch: true, body: `[]`, err: "body is not JSON: json: cannot unmarshal array into Go value of type struct { Acks *[]jsonapi.ackWire \"json:\\\"acknowledgments\\\"\"; ConsumerGroup string \"json:\\\"consumerGroup\\\"\" }"},
}

func TestDecodeAck(t *testing.T) {
	t.Parallel()
	for _, c := range ackBodies {
		got, err := DecodeAck([]byte(c.body), c.batch)
		wantBad(t, err, c.err)
		if c.err == "" && !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s (batch %v):\n got %+v\nwant %+v", c.body, c.batch, got, c.want)
		}
	}
}

// ackIsBatch is the route a body of <prefix>.v1.ack stands for: the batch
// when it is an object with an acknowledgments member (null too).
func ackIsBatch(body []byte) bool {
	var probe map[string]json.RawMessage
	if json.Unmarshal(body, &probe) != nil {
		return false
	}
	for k := range probe {
		if strings.EqualFold(k, "acknowledgments") { // encoding/json's matching
			return true
		}
	}
	return false
}

// sameAsHTTP checks DecodeAnyAck against DecodeAck with the route's flag:
// the same acknowledgements, or the same error.
func sameAsHTTP(t *testing.T, body []byte) {
	t.Helper()
	batch := ackIsBatch(body)
	want, wantErr := DecodeAck(body, batch)
	got, err := DecodeAnyAck(body)
	if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Errorf("%q: DecodeAnyAck says %v, DecodeAck (batch %v) %v", body, err, batch, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%q: DecodeAnyAck reads %+v, DecodeAck (batch %v) %+v", body, got, batch, want)
	}
}

func TestDecodeAnyAck(t *testing.T) {
	t.Parallel()
	for _, c := range ackBodies {
		sameAsHTTP(t, []byte(c.body))
	}
	for _, body := range []string{
		`{"acknowledgments":null}`, `{"acknowledgments":5}`, `{"acknowledgments":"x"}`, `{"Acknowledgments":[]}`,
		`5`, `true`, `"x"`, `[{"transactionId":"t","partitionId":1}]`, `nul`,
		`{"acknowledgments":[{"transactionId":"a","partitionId":1}],"transactionId":5}`,
		`{"acknowledgments":[{"transactionId":"a","partitionId":1}],"acknowledgments":[{"partitionId":2}]}`,
		`{"acknowledgments":[{"transactionId":"a","partitionId":1}],"acknowledgments":null}`,
		`{"acknowledgments":null,"acknowledgments":[]}`,
		`{"transactionId":"t","partitionId":1,"consumerGroup":7}`,
	} {
		sameAsHTTP(t, []byte(body))
	}
}

func TestAppendAckResults(t *testing.T) {
	t.Parallel()
	golden(t, AppendAckResult(nil, 0, &AckResult{TransactionID: "t-1", Queue: "orders.eu", Partition: "customer-42", LeaseReleased: true}),
		`{"index":0,"transactionId":"t-1","success":true,"error":null,"queueName":"orders.eu","partitionName":"customer-42","leaseReleased":true,"dlq":false}`)
	golden(t, AppendAckResult(nil, 12, &AckResult{TransactionID: "t-2", Error: "ACK operation failed: Message not found"}),
		`{"index":12,"transactionId":"t-2","success":false,"error":"ACK operation failed: Message not found","queueName":null,"partitionName":null,"leaseReleased":false,"dlq":false}`)
	golden(t, AppendAckResult(nil, 1, &AckResult{TransactionID: "t", Queue: "q", Partition: "p", DLQ: true}),
		`{"index":1,"transactionId":"t","success":true,"error":null,"queueName":"q","partitionName":"p","leaseReleased":false,"dlq":true}`)
	golden(t, AppendAckResult(nil, 0, &AckResult{TransactionID: nasty, Error: nasty, Queue: nasty, Partition: nasty}),
		`{"index":0,"transactionId":`+nastyJSON+`,"success":false,"error":`+nastyJSON+`,"queueName":`+nastyJSON+`,"partitionName":`+nastyJSON+`,"leaseReleased":false,"dlq":false}`)

	golden(t, AppendAckResults(nil, nil), `[]`)
	golden(t, AppendAckResults([]byte{}, []AckResult{{TransactionID: "a", Queue: "q", Partition: "p"}, {TransactionID: "b", Error: "Invalid or expired lease"}}),
		`[{"index":0,"transactionId":"a","success":true,"error":null,"queueName":"q","partitionName":"p","leaseReleased":false,"dlq":false},`+
			`{"index":1,"transactionId":"b","success":false,"error":"Invalid or expired lease","queueName":null,"partitionName":null,"leaseReleased":false,"dlq":false}]`)
}
