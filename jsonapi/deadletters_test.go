package jsonapi

import (
	"strings"
	"testing"
)

// Dead letters: GET /api/v1/dlq's query or <prefix>.v1.dlq's body, and the
// answer.

func TestParseDeadLettersQuery(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		query func(string) string
		want  DeadLettersRequest
		err   string
	}{
		{query: params()},
		{query: params("queue", "orders", "consumerGroup", "billing", "limit", "50", "offset", "200"),
			want: DeadLettersRequest{Queue: "orders", ConsumerGroup: "billing", Limit: 50, Offset: 200}},
		{query: params("limit", "-1", "offset", "-2"), want: DeadLettersRequest{Limit: -1, Offset: -2}},
		{query: params("limit", "ten"), err: `limit must be an integer, got "ten"`},
		{query: params("limit", "2147483648"), err: `limit must be an integer, got "2147483648"`},
		{query: params("offset", "1e3"), err: `offset must be an integer, got "1e3"`},
	} {
		got, err := ParseDeadLettersQuery(c.query)
		wantBad(t, err, c.err)
		if c.err == "" && got != c.want {
			t.Errorf("got %+v, want %+v", got, c.want)
		}
	}
}

func TestDecodeDeadLetters(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		body string
		want DeadLettersRequest
		err  string
	}{
		{body: `{}`},
		{body: `{"queue":"orders","consumerGroup":"billing","limit":5,"offset":10,"other":true}`,
			want: DeadLettersRequest{Queue: "orders", ConsumerGroup: "billing", Limit: 5, Offset: 10}},
		{body: `{"limit":"5"}`, err: "dlq body: json: cannot unmarshal string into Go struct field DeadLettersRequest.limit of type int"},
		{body: `{"queue":1}`, err: "dlq body: json: cannot unmarshal number into Go struct field DeadLettersRequest.queue of type string"},
		{body: ``, err: "dlq body: unexpected end of JSON input"},
		{body: `[]`, err: "dlq body: json: cannot unmarshal array into Go value of type jsonapi.DeadLettersRequest"},
	} {
		got, err := DecodeDeadLetters([]byte(c.body))
		wantBad(t, err, c.err)
		if c.err == "" && got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.body, got, c.want)
		}
	}
}

func TestDeadLettersRequestValidate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, want DeadLettersRequest
		err      string
	}{
		{in: DeadLettersRequest{Queue: "q"}, want: DeadLettersRequest{Queue: "q", Limit: 100}},
		{in: DeadLettersRequest{Queue: "q", ConsumerGroup: "g", Limit: 1, Offset: 5}, want: DeadLettersRequest{Queue: "q", ConsumerGroup: "g", Limit: 1, Offset: 5}},
		{in: DeadLettersRequest{Queue: "q", Limit: 1000}, want: DeadLettersRequest{Queue: "q", Limit: 1000}},
		{in: DeadLettersRequest{}, err: "queue is required"},
		{in: DeadLettersRequest{Queue: strings.Repeat("q", 256)}, err: "queue must be 1..255 bytes, got 256"},
		{in: DeadLettersRequest{Queue: "q\x00"}, err: "queue must not contain control characters"},
		{in: DeadLettersRequest{Queue: "q", Limit: 1001}, err: "limit must be 1..1000 and offset at least 0, got 1001 and 0"},
		{in: DeadLettersRequest{Queue: "q", Limit: -1}, err: "limit must be 1..1000 and offset at least 0, got -1 and 0"},
		{in: DeadLettersRequest{Queue: "q", Offset: -1}, err: "limit must be 1..1000 and offset at least 0, got 100 and -1"},
	} {
		got := c.in
		err := got.Validate()
		wantBad(t, err, c.err)
		if c.err == "" && got != c.want {
			t.Errorf("%+v: got %+v, want %+v", c.in, got, c.want)
		}
	}
}

func TestAppendDeadLetters(t *testing.T) {
	t.Parallel()
	golden(t, AppendDeadLetters(nil, nil, 100, 0, 0), `{"messages":[],"pagination":{"limit":100,"offset":0,"total":0}}`)

	dls := []DeadLetter{
		{ID: uuidA, Found: true, TransactionID: "order-1001", PartitionID: 7, Queue: "orders.eu", Partition: "customer-42", Group: "billing",
			Error: "boom", RetryCount: 3, Offset: 12, Payload: []byte(`{"total":12.5}`), CreatedAt: atWhole, FailedAt: at},
		// Retention removed its message: id, data and createdAt are null.
		{ID: uuidB, TransactionID: "order-1002", PartitionID: 7, Queue: "orders.eu", Partition: "customer-42", Group: QueueModeGroup,
			Offset: 13, Payload: []byte(`"never written"`), Encoded: true, CreatedAt: atWhole, FailedAt: atWhole},
		{ID: uuidB, Found: true, TransactionID: "t", PartitionID: 8, Queue: "q", Partition: "p", Group: "g",
			Offset: 1, Payload: []byte(`"aGk="`), Encoded: true, CreatedAt: atWhole, FailedAt: atWhole},
	}
	golden(t, AppendDeadLetters(nil, dls, 3, 40, 1234567890123),
		`{"messages":[`+
			`{"id":"01234567-89ab-cdef-0123-456789abcdef","transactionId":"order-1001","partitionId":"7","queue":"orders.eu","partition":"customer-42",`+
			`"consumerGroup":"billing","errorMessage":"boom","retryCount":3,"offset":12,"data":{"total":12.5},"createdAt":"2026-01-02T03:04:05Z",`+
			`"failedAt":"2026-11-30T12:00:00.123456Z"},`+
			`{"id":null,"transactionId":"order-1002","partitionId":"7","queue":"orders.eu","partition":"customer-42",`+
			`"consumerGroup":"__QUEUE_MODE__","errorMessage":"","retryCount":0,"offset":13,"data":null,"createdAt":null,`+
			`"failedAt":"2026-01-02T03:04:05Z"},`+
			`{"id":"ffeeddcc-bbaa-9988-7766-554433221100","transactionId":"t","partitionId":"8","queue":"q","partition":"p",`+
			`"consumerGroup":"g","errorMessage":"","retryCount":0,"offset":1,"data":"aGk=","encoding":"base64","createdAt":"2026-01-02T03:04:05Z",`+
			`"failedAt":"2026-01-02T03:04:05Z"}`+
			`],"pagination":{"limit":3,"offset":40,"total":1234567890123}}`)

	golden(t, AppendDeadLetters(nil, []DeadLetter{{TransactionID: nasty, Queue: nasty, Partition: nasty, Group: nasty, Error: nasty, FailedAt: atWhole}}, 1, 0, 1),
		`{"messages":[{"id":null,"transactionId":`+nastyJSON+`,"partitionId":"0","queue":`+nastyJSON+`,"partition":`+nastyJSON+
			`,"consumerGroup":`+nastyJSON+`,"errorMessage":`+nastyJSON+`,"retryCount":0,"offset":0,"data":null,"createdAt":null,`+
			`"failedAt":"2026-01-02T03:04:05Z"}],"pagination":{"limit":1,"offset":0,"total":1}}`)
}
