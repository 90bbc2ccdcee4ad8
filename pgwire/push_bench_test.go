package pgwire_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/segment"
)

// BenchmarkPushBundle: one PushBundle call per op, with S segments of
// 10 frames (200-byte payloads) over S partitions, from one caller and from
// 16. Reports items/s and the fixed and per-segment costs show in ns/op.
func BenchmarkPushBundle(b *testing.B) {
	payload := []byte(`{"data":"` + strings.Repeat("x", 190) + `"}`)
	for _, callers := range []int{1, 16} {
		for _, segs := range []int{1, 16, 128} {
			b.Run(fmt.Sprintf("callers=%d/segments=%d", callers, segs), func(b *testing.B) {
				db := newDB(b)
				var seq atomic.Int64
				build := func(caller int) []segment.Write {
					writes := make([]segment.Write, segs)
					for s := range writes {
						frames := make([]segment.Frame, 10)
						for k := range frames {
							frames[k] = segment.Frame{ID: uuid.Must(uuid.NewV7()), TransactionID: fmt.Sprint(seq.Add(1)), Payload: payload}
						}
						writes[s] = segment.Write{
							Queue: "bench", Partition: fmt.Sprintf("c%d-p%d", caller, s), Count: 10,
							Hashes: segment.AppendHashes(nil, frames), Blob: segment.Pack(nil, frames),
						}
					}
					return writes
				}
				// provision the partitions outside the timed loop
				for c := 0; c < callers; c++ {
					if _, err := db.PushBundle(context.Background(), build(c)); err != nil {
						b.Fatal(err)
					}
				}
				var caller atomic.Int64
				b.SetBytes(int64(segs * 10 * len(payload)))
				b.SetParallelism((callers + 1) / 2) // GOMAXPROCS here is 2
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					c := int(caller.Add(1)-1) % callers
					for pb.Next() {
						writes := build(c)
						// The bench writes with a tight p_verified, as fusion does.
						for i := range writes {
							writes[i].Verified = 1 << 62
						}
						if _, err := db.PushBundle(context.Background(), writes); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.N*segs*10)/b.Elapsed().Seconds(), "items/s")
			})
		}
	}
}
