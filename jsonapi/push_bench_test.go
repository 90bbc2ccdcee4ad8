package jsonapi

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkDecodePush: a 100-item push body, with queen-bench's payload (one
// long string) and with order-event JSON (many short strings and numbers).
func BenchmarkDecodePush(b *testing.B) {
	for _, p := range []struct{ name, payload string }{
		{"long-string", `{"data":"` + strings.Repeat("x", 189) + `"}`},
		{"order-event", `{"orderId":"ord-00012345","customer":{"id":"c-000987","tier":"gold","country":"DE"},"lines":[{"sku":"SKU-00042","qty":2,"price":12.50}],"total":25.00,"currency":"EUR","placedAt":"2026-11-30T12:00:00.000Z","note":null}`},
	} {
		var body bytes.Buffer
		body.WriteString(`{"items":[`)
		for k := 0; k < 100; k++ {
			if k > 0 {
				body.WriteByte(',')
			}
			fmt.Fprintf(&body, `{"queue":"bench.q0","partition":"p%d","transactionId":"run-1-2-%d","payload":%s}`, k%7, k, p.payload)
		}
		body.WriteString(`]}`)
		b.Run(p.name, func(b *testing.B) {
			b.SetBytes(int64(body.Len()))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := DecodePush(body.Bytes()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
