package fusion_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/segment"
)

// BenchmarkPostgres pushes one 200-byte frame per op from N submitters over
// P partitions into a real PostgreSQL, in three modes run side by side:
//
//	fusion      the defaults
//	bundlemax1  fusion with QUEEN_V2_BUNDLE_MAX=1 (no cross-partition bundling)
//	direct      one commit per submission (no fusion at all)
//
// It reports items/s and items per commit.
func BenchmarkPostgres(b *testing.B) {
	payload := []byte(`{"data":"` + strings.Repeat("x", 188) + `"}`)
	for _, parts := range []int{1, 1000} {
		for _, submitters := range []int{1, 16, 64} {
			for _, mode := range []string{"fusion", "bundlemax1", "direct"} {
				b.Run(fmt.Sprintf("partitions=%d/submitters=%d/%s", parts, submitters, mode), func(b *testing.B) {
					db := openDB(b, 16)
					var push func(p string, fr []segment.Frame) bool
					var f *fusion.Fusion
					if mode == "direct" {
						push = func(p string, fr []segment.Frame) bool {
							w := segment.Write{Queue: "bench", Partition: p, Count: int32(len(fr)), Hashes: segment.AppendHashes(nil, fr), Blob: segment.Pack(nil, fr)}
							res, err := db.PushBundle(context.Background(), []segment.Write{w})
							return err == nil && res[0].Status == segment.Queued
						}
					} else {
						f = start(b, db, func(c *fusion.Config) {
							if mode == "bundlemax1" {
								c.BundleMax = 1
							}
						})
						push = func(p string, fr []segment.Frame) bool {
							done := make(chan []fusion.Verdict, 1)
							if err := f.Submit(context.Background(), fusion.Submission{Queue: "bench", Partition: p, Frames: fr,
								Done: func(v []fusion.Verdict) { done <- v }}); err != nil {
								return false
							}
							return (<-done)[0].Status == fusion.Queued
						}
					}
					runSubmitters(b, submitters, parts, payload, push)
					if f != nil {
						st := f.Stats()
						b.ReportMetric(float64(st.ItemsFired)/float64(max(st.Bundles, 1)), "items/commit")
						b.ReportMetric(float64(st.Segments)/float64(max(st.Bundles, 1)), "segments/commit")
					} else {
						b.ReportMetric(1, "items/commit")
					}
				})
			}
		}
	}
}

func runSubmitters(b *testing.B, submitters, parts int, payload []byte, push func(string, []segment.Frame) bool) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Int64
	b.SetBytes(int64(len(payload)))
	b.ResetTimer()
	for s := 0; s < submitters; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := next.Add(1)
				if n > int64(b.N) {
					return
				}
				fr := []segment.Frame{{ID: uuid.Must(uuid.NewV7()), TransactionID: uuid.NewString(), Payload: payload}}
				if !push(fmt.Sprintf("p%d", n%int64(parts)), fr) {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if failed.Load() > 0 {
		b.Fatalf("%d pushes failed", failed.Load())
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
}
