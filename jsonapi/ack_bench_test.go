package jsonapi

import (
	"fmt"
	"strings"
	"testing"
)

// ackBatchBody is a 100-item batch acknowledgement as queen-bench and the Go
// client send it: a group, and per message its transactionId, partitionId
// (a string), leaseId and status.
func ackBatchBody(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"consumerGroup":"bench-group","acknowledgments":[`)
	for k := 0; k < n; k++ {
		if k > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"transactionId":"run-1-2-%d","partitionId":"%d","leaseId":"0198f0a4-7c1e-7b2a-9d3e-%012x","status":"completed"}`, k, 1000+k%7, k)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// BenchmarkDecodeAck: a 100-item batch through HTTP's route and
// <prefix>.v1.ack, and through encoding/json's reading of both (what the
// scanner gives up to).
func BenchmarkDecodeAck(b *testing.B) {
	body := ackBatchBody(100)
	for _, c := range []struct {
		name   string
		decode func([]byte) ([]Ack, error)
	}{
		{"batch", func(body []byte) ([]Ack, error) { return DecodeAck(body, true) }},
		{"any", DecodeAnyAck},
		{"batch-encoding-json", func(body []byte) ([]Ack, error) { return decodeAckJSON(body, true) }},
		{"any-encoding-json", decodeAnyAckJSON},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if acks, err := c.decode(body); err != nil || len(acks) != 100 {
					b.Fatal(len(acks), err)
				}
			}
		})
	}
}
