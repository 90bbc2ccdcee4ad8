package cursors

import (
	"testing"
	"time"
)

// BenchmarkAckReply is the reply subject every delivery carries: ns and
// allocations a message.
func BenchmarkAckReply(b *testing.B) {
	e, err := NewEngine(Config{Store: newFakeStore(), Deliverer: &fakeDeliverer{}, Clock: newFakeClock(), Streams: map[string][]string{"ORDERS": {"orders.>"}}})
	if err != nil {
		b.Fatal(err)
	}
	c := &consumer{e: e, key: consumerKey{stream: "ORDERS", name: "worker"}, cseq: 123456}
	at := time.Unix(1765100000, 123456789)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if s := c.ackReply(17, 1, int64(1_000_000+i), at, 5000, ""); len(s) < 40 {
			b.Fatal(s)
		}
	}
}
