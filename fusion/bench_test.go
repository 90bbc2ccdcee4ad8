package fusion

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/queenbridge/queenbridge/segment"
)

// fastSink answers every segment queued at once; it measures fusion alone.
type fastSink struct {
	mu   sync.Mutex // guards last: bundles in flight at once each commit
	last map[string]int64
}

func (s *fastSink) PushBundle(_ context.Context, writes []segment.Write) ([]segment.Result, error) {
	out := make([]segment.Result, len(writes))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, w := range writes {
		k := w.Queue + "\x1f" + w.Partition
		out[i] = segment.Result{PartitionID: 1, WindowSeconds: 60, Status: segment.Queued, BaseOffset: s.last[k] + 1}
		s.last[k] += int64(w.Count)
	}
	return out, nil
}

func (s *fastSink) SegmentAt(context.Context, int64, int64) (segment.Stored, error) {
	return segment.Stored{}, fmt.Errorf("fastSink has no segments")
}

// BenchmarkSubmitToVerdict: one frame per op, submit to verdict, through a
// sink that costs nothing. ns/op and allocs/op are per frame.
func BenchmarkSubmitToVerdict(b *testing.B) {
	payload := []byte(`{"data":"` + string(make([]byte, 0)) + `0123456789012345678901234567890123456789"}`)
	for _, submitters := range []int{1, 64} {
		b.Run(fmt.Sprintf("submitters=%d", submitters), func(b *testing.B) {
			f := startFusion(b, &fastSink{last: map[string]int64{}}, nil)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.SetBytes(int64(len(payload)))
			b.ResetTimer()
			for s := 0; s < submitters; s++ {
				wg.Add(1)
				go func(s int) {
					defer wg.Done()
					done := make(chan []Verdict, 1)
					fr := []segment.Frame{{Payload: payload}}
					for {
						n := next.Add(1)
						if n > int64(b.N) {
							return
						}
						fr[0].TransactionID = fmt.Sprint(n)
						if err := f.Submit(context.Background(), Submission{Queue: "q", Partition: fmt.Sprintf("p%d", n%1000), Frames: fr,
							Done: func(v []Verdict) { done <- v }}); err != nil {
							b.Error(err)
							return
						}
						<-done
					}
				}(s)
			}
			wg.Wait()
			st := f.Stats()
			b.ReportMetric(float64(st.ItemsFired)/float64(max(st.Bundles, 1)), "items/commit")
		})
	}
}

// BenchmarkSmallAfterLarge: one-frame submissions after the shard once took
// a 20,000-frame segment (the layer-2 dedup map must not keep that size).
func BenchmarkSmallAfterLarge(b *testing.B) {
	f := startFusion(b, &fastSink{last: map[string]int64{}}, func(c *Config) { c.Shards = 1 })
	big := make([]segment.Frame, 20000)
	for i := range big {
		big[i] = segment.Frame{TransactionID: fmt.Sprint("big-", i), Payload: []byte("1")}
	}
	done := make(chan []Verdict, 1)
	if err := f.Submit(context.Background(), Submission{Queue: "q", Partition: "big", Frames: big, Done: func(v []Verdict) { done <- v }}); err != nil {
		b.Fatal(err)
	}
	<-done
	fr := []segment.Frame{{Payload: []byte("1")}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fr[0].TransactionID = fmt.Sprint(i)
		if err := f.Submit(context.Background(), Submission{Queue: "q", Partition: fmt.Sprint("p", i%100), Frames: fr,
			Done: func(v []Verdict) { done <- v }}); err != nil {
			b.Fatal(err)
		}
		<-done
	}
}
