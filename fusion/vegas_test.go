package fusion

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
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

// With a yield, a bundle's permit stays taken after its verdicts are out
// (the other bridges' turn); without one it is back before them.
func TestYieldHoldsThePermitAfterTheCommit(t *testing.T) {
	sink := newMemSink(t)
	sink.delay = func(int) time.Duration { return 20 * time.Millisecond }
	f := startFusion(t, sink, func(c *Config) { c.VegasMax, c.VegasInitial = 1, 1 })
	inUseAtVerdict := func() int {
		got := make(chan int, 1)
		err := f.Submit(context.Background(), Submission{Queue: "q", Partition: "p", Frames: frames(uuid.NewString()),
			Done: func([]Verdict) { got <- f.Stats().PermitsInUse }})
		if err != nil {
			t.Fatal(err)
		}
		return <-got
	}
	if n := inUseAtVerdict(); n != 0 {
		t.Fatalf("without a yield %d permits in use at the verdict", n)
	}
	f.SetYield(1)
	if n := inUseAtVerdict(); n != 1 {
		t.Fatalf("with a yield %d permits in use at the verdict, want the bundle's own", n)
	}
	f.SetYield(0)
	waitFor(t, "the held permit to come back", func() bool { return f.Stats().PermitsInUse == 0 })
	if busy := f.Stats().Busy; busy < 40*time.Millisecond {
		t.Fatalf("busy %v after two 20 ms bundles", busy)
	}
}
