package bridge

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

// instantSink commits every segment at once, in memory: what is left is the
// bridge's own work and fusion's.
type instantSink struct {
	mu   sync.Mutex // guards last: bundles in flight at once each commit
	last map[string]int64
}

func (s *instantSink) PushBundle(_ context.Context, writes []segment.Write) ([]segment.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]segment.Result, len(writes))
	for i, w := range writes {
		k := w.Queue + "\x1f" + w.Partition
		out[i] = segment.Result{PartitionID: int64(len(k)), WindowSeconds: 60, Status: segment.Queued, BaseOffset: s.last[k] + 1, CreatedAt: time.Now()}
		s.last[k] += int64(w.Count)
	}
	return out, nil
}

func (s *instantSink) SegmentAt(context.Context, int64, int64) (segment.Stored, error) {
	return segment.Stored{}, fmt.Errorf("instantSink: no segments")
}

// BenchmarkPushPath: one push request from body to rendered answer (decode,
// ids, layer-1 dedup, grouping, fusion with a sink that costs nothing,
// verdicts, rendering), at 1 and 100 items per request, each request to one
// partition of 100. Reports ns and allocations per item.
func BenchmarkPushPath(b *testing.B) {
	ctx := context.Background()
	db, err := pgwire.Open(ctx, pgwire.Config{DSN: testenv.NewDatabase(b), MaxConns: 4})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	fu, err := fusion.New(fusion.Config{Sink: &instantSink{last: map[string]int64{}}})
	if err != nil {
		b.Fatal(err)
	}
	if err := fu.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer fu.Stop(ctx)
	br, err := New(Config{DB: db, Fusion: fu, Registry: prometheus.NewRegistry()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	payload := `{"orderId":"ord-00012345","customer":{"id":"c-000987","tier":"gold"},"total":25.50,"currency":"EUR"}`
	for _, items := range []int{1, 100} {
		b.Run(fmt.Sprintf("items=%d", items), func(b *testing.B) {
			bodies := make([][]byte, 100)
			for p := range bodies {
				var body bytes.Buffer
				body.WriteString(`{"items":[`)
				for k := 0; k < items; k++ {
					if k > 0 {
						body.WriteByte(',')
					}
					fmt.Fprintf(&body, `{"queue":"bench.q","partition":"p%d","payload":%s}`, p, payload)
				}
				body.WriteString(`]}`)
				bodies[p] = body.Bytes()
			}
			done := make(chan int, 1)
			answer := func(status int, _ []byte) { done <- status }
			br.pushBody(ctx, "bench", [16]byte{}, bodies[0], answer) // queue settings cached outside the loop
			<-done
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				br.pushBody(ctx, "bench", [16]byte{}, bodies[i%len(bodies)], answer)
				if status := <-done; status != 201 {
					b.Fatalf("status %d", status)
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*items), "ns/item")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N*items), "allocs/item")
		})
	}
}
