package cursors_test

import (
	"testing"

	"github.com/queenbridge/queenbridge/cursors"
	"github.com/queenbridge/queenbridge/segment"
)

// BenchmarkTailCommitEvicting commits one-message segments to a partition
// whose run fills the tail, so every commit evicts its oldest segment: the
// shape of a moderate load, where each bundle adds a message or two to
// each partition. The cost of a commit must not grow with the segments the
// partition holds.
func BenchmarkTailCommitEvicting(b *testing.B) {
	for _, held := range []int{1_000, 10_000} {
		b.Run(map[int]string{1_000: "1k-segments", 10_000: "10k-segments"}[held], func(b *testing.B) {
			w, r := tailWrite(1, 1, 1)
			tail := cursors.NewTail(int64(held) * tailSegSize(b, w, r))
			tail.Want([16]byte{}, "q")
			ws, rs := []segment.Write{w}, []segment.Result{r}
			for o := int64(1); o <= int64(held); o++ {
				rs[0].BaseOffset = o
				tail.Committed(ws, rs)
			}
			b.ResetTimer()
			for i := range b.N {
				rs[0].BaseOffset = int64(held + 1 + i)
				tail.Committed(ws, rs)
			}
		})
	}
}

// tailSegSize is what one segment of w counts against the tail's bound.
func tailSegSize(b *testing.B, w segment.Write, r segment.Result) int64 {
	probe := cursors.NewTail(1 << 40)
	probe.Want([16]byte{}, "q")
	probe.Committed([]segment.Write{w}, []segment.Result{r})
	n := probe.Stats().Bytes
	if n <= 0 {
		b.Fatalf("a segment counts %d bytes", n)
	}
	return n
}
