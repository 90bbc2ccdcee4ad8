package leaf_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// BenchmarkPublish: JetStream-shaped deliveries (an ack reply with the
// shown subject, a small header, a 128-byte body) to one subscriber,
// timed until the subscriber has them all.
func BenchmarkPublish(b *testing.B) {
	h := startHub(b)
	c := h.dial(b)
	nc := h.natsClient(b)
	var got atomic.Int64 // the subscription's callback counts, the benchmark reads
	if _, err := nc.Subscribe("_INBOX.bench", func(*nats.Msg) { got.Add(1) }); err != nil {
		b.Fatal(err)
	}
	testkit.WaitFor(b, "interest", 30*time.Second, func() bool { return c.Interested("_INBOX.bench") })
	header := []byte("NATS/1.0\r\nNats-Msg-Id: order-1001\r\n\r\n")
	body := make([]byte, 128)
	b.SetBytes(int64(len(header) + len(body)))
	b.ResetTimer()
	for range b.N {
		if err := c.Publish("_INBOX.bench", ackReply+"@"+shown, header, body); err != nil {
			b.Fatal(err)
		}
	}
	testkit.WaitFor(b, "every message delivered", time.Minute, func() bool { return got.Load() >= int64(b.N) })
}
