package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/client"
)

// BenchmarkProducer adds b.N items of a 200-byte payload over 100
// partitions of one queue through a buffering producer against a running
// bridge (its own process) and closes it: items/s end to end, and the
// client's allocations per item. Compare with
// queen-bench -clients 16 -items 100 -partitions 100 -group on the same
// machine.
func BenchmarkProducer(b *testing.B) {
	br := newBridge(b, bridgeBinary(b))
	c, err := client.New(client.Config{NATS: natsConn(b), Prefix: br.prefix})
	if err != nil {
		b.Fatal(err)
	}
	payload := json.RawMessage(`{"data":"` + strings.Repeat("x", 189) + `"}`)
	var failed atomic.Int64 // OnResult runs on the queue's goroutine, and on Add's when its context ends
	p := c.NewProducer(client.ProducerConfig{MaxItems: 100, Linger: 2 * time.Millisecond, OnResult: func(_ client.Item, r client.Result, err error) {
		if err != nil || !r.Stored() {
			failed.Add(1)
		}
	}})
	parts := make([]string, 100)
	for i := range parts {
		parts[i] = fmt.Sprint("p", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if err := p.Add(context.Background(), client.Item{Queue: "bench", Partition: parts[i%len(parts)], Payload: payload}); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "items/s")
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d items not stored", n)
	}
}
