package jsonapi

import (
	"encoding/json"
	"testing"
)

// The pop answer: its head, each popped message, and its close.

func TestAppendPopped(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name         string
		m            PoppedMessage
		lease, group string
		want         string
	}{
		{name: "leased, no trace",
			m:     PoppedMessage{ID: uuidA, TransactionID: "order-1001", Payload: []byte(`{"total":12.5}`), CreatedAt: at, PartitionID: 7, Partition: "customer-42"},
			lease: uuidBText, group: "billing",
			want: `{"id":"01234567-89ab-cdef-0123-456789abcdef","transactionId":"order-1001","traceId":null,"data":{"total":12.5},` +
				`"producerSub":null,"createdAt":"2026-11-30T12:00:00.123456Z","partitionId":"7","partition":"customer-42",` +
				`"leaseId":"ffeeddcc-bbaa-9988-7766-554433221100","consumerGroup":"billing"}`},
		{name: "auto-ack, traced",
			m:     PoppedMessage{ID: uuidB, TransactionID: "t", TraceID: "trace-9", Payload: []byte(`null`), CreatedAt: atWhole, PartitionID: 9223372036854775807, Partition: "Default"},
			group: QueueModeGroup,
			want: `{"id":"ffeeddcc-bbaa-9988-7766-554433221100","transactionId":"t","traceId":"trace-9","data":null,` +
				`"producerSub":null,"createdAt":"2026-01-02T03:04:05Z","partitionId":"9223372036854775807","partition":"Default",` +
				`"leaseId":"","consumerGroup":"__QUEUE_MODE__"}`},
		{name: "base64",
			m:     PoppedMessage{ID: uuidA, TransactionID: "t", Payload: []byte(`"aGk="`), Encoded: true, CreatedAt: atWhole, PartitionID: 1, Partition: "p"},
			lease: uuidAText, group: "g",
			want: `{"id":"01234567-89ab-cdef-0123-456789abcdef","transactionId":"t","traceId":null,"data":"aGk=","encoding":"base64",` +
				`"producerSub":null,"createdAt":"2026-01-02T03:04:05Z","partitionId":"1","partition":"p",` +
				`"leaseId":"01234567-89ab-cdef-0123-456789abcdef","consumerGroup":"g"}`},
		{name: "escapes",
			m:     PoppedMessage{ID: uuidA, TransactionID: nasty, TraceID: nasty, Payload: []byte(`"x\"y"`), CreatedAt: atWhole, PartitionID: 2, Partition: nasty},
			lease: nasty, group: nasty,
			want: `{"id":"01234567-89ab-cdef-0123-456789abcdef","transactionId":` + nastyJSON + `,"traceId":` + nastyJSON +
				`,"data":"x\"y","producerSub":null,"createdAt":"2026-01-02T03:04:05Z","partitionId":"2","partition":` + nastyJSON +
				`,"leaseId":` + nastyJSON + `,"consumerGroup":` + nastyJSON + `}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := AppendPopped([]byte("["), &c.m, c.lease, c.group)
			if string(got[:1]) != "[" {
				t.Fatal("did not append")
			}
			golden(t, got[1:], c.want)
			var back struct {
				TransactionID, TraceID, Partition, LeaseID, ConsumerGroup string
			}
			if err := json.Unmarshal(got[1:], &back); err != nil {
				t.Fatal(err)
			}
			if c.name == "escapes" && (back.TransactionID != nastyBack || back.TraceID != nastyBack || back.Partition != nastyBack ||
				back.LeaseID != nastyBack || back.ConsumerGroup != nastyBack) {
				t.Fatalf("escaped strings read back as %+v", back)
			}
		})
	}
}

func TestPopAnswer(t *testing.T) {
	t.Parallel()
	head := PopHead{Queue: "orders.eu", Partition: "customer-42", PartitionID: 7, Lease: uuidBText, Group: "billing", Claimed: 2}
	m1 := PoppedMessage{ID: uuidA, TransactionID: "a", Payload: []byte(`1`), CreatedAt: atWhole, PartitionID: 7, Partition: "customer-42"}
	m2 := PoppedMessage{ID: uuidB, TransactionID: "b", Payload: []byte(`[2]`), CreatedAt: atWhole, PartitionID: 8, Partition: "customer-43"}
	out := OpenPop(nil, &head)
	out = AppendPopped(out, &m1, head.Lease, head.Group)
	out = append(out, ',')
	out = AppendPopped(out, &m2, head.Lease, head.Group)
	golden(t, ClosePop(out), `{"success":true,"queue":"orders.eu","partition":"customer-42","partitionId":"7",`+
		`"leaseId":"ffeeddcc-bbaa-9988-7766-554433221100","consumerGroup":"billing","partitionsClaimed":2,"messages":[`+
		`{"id":"01234567-89ab-cdef-0123-456789abcdef","transactionId":"a","traceId":null,"data":1,"producerSub":null,`+
		`"createdAt":"2026-01-02T03:04:05Z","partitionId":"7","partition":"customer-42","leaseId":"ffeeddcc-bbaa-9988-7766-554433221100","consumerGroup":"billing"},`+
		`{"id":"ffeeddcc-bbaa-9988-7766-554433221100","transactionId":"b","traceId":null,"data":[2],"producerSub":null,`+
		`"createdAt":"2026-01-02T03:04:05Z","partitionId":"8","partition":"customer-43","leaseId":"ffeeddcc-bbaa-9988-7766-554433221100","consumerGroup":"billing"}]}`)

	// Auto-ack: leaseId is "" (never null); escapes in the head.
	golden(t, ClosePop(OpenPop(nil, &PopHead{Queue: nasty, Partition: nasty, PartitionID: 1, Group: nasty, Claimed: 1})),
		`{"success":true,"queue":`+nastyJSON+`,"partition":`+nastyJSON+`,"partitionId":"1","leaseId":"","consumerGroup":`+nastyJSON+
			`,"partitionsClaimed":1,"messages":[]}`)
}
