package fusion

import (
	"testing"
	"time"
)

// The limit grows only while bundles leave full and latency stays near the
// minimum; bundles with room left shrink it to the floor; queueing latency
// shrinks it whatever the fill.
func TestVegasGrowsOnlyOnFullBundles(t *testing.T) {
	v := newVegas(1, 8, 4)
	use := func(n int) { // n permits in use, then release one sample
		v.mu.Lock()
		v.inflight = n
		v.mu.Unlock()
	}
	limit := func() int { l, _, _ := v.snapshot(); return l }
	for i := 0; i < 10; i++ {
		use(limit())
		v.release(time.Millisecond, true, false, false) // room left
	}
	if limit() != 1 {
		t.Fatalf("limit %d after bundles with room left, want the floor 1", limit())
	}
	for i := 0; i < 10; i++ {
		use(limit())
		v.release(time.Millisecond, true, true, false) // full, no queueing
	}
	if limit() != 8 {
		t.Fatalf("limit %d after full bundles at the minimum latency, want the ceiling 8", limit())
	}
	for i := 0; i < 3; i++ {
		use(limit())
		v.release(20*time.Millisecond, true, true, false) // full, but queueing
	}
	if limit() >= 8 {
		t.Fatalf("limit %d did not shrink under queueing latency", limit())
	}
	before := limit()
	use(1)
	v.release(0, false, false, false) // an unsampled release changes nothing
	if limit() != before {
		t.Fatalf("an unsampled release moved the limit %d -> %d", before, limit())
	}
}

// SetShare caps each of n bridges at its share of VegasMax, never below
// VegasMin, and lifts the cap again when the others leave.
func TestShareDividesTheCeiling(t *testing.T) {
	f, err := New(Config{Sink: newMemSink(t), VegasMin: 1, VegasMax: 16, VegasInitial: 16})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ n, ceiling, limitAtMost int }{{1, 16, 16}, {2, 8, 8}, {3, 6, 6}, {40, 1, 1}, {1, 16, 1}} {
		f.SetShare(c.n)
		st := f.Stats()
		if st.VegasCeiling != c.ceiling || st.VegasLimit > c.limitAtMost {
			t.Fatalf("share %d: ceiling %d limit %d, want ceiling %d limit ≤ %d", c.n, st.VegasCeiling, st.VegasLimit, c.ceiling, c.limitAtMost)
		}
	}
}
