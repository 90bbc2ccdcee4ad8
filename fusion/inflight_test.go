package fusion

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// The limit is 1 + floor(F / W): one bundle, plus as many as can do their
// work (W, a Sink call's time less the flush F) while one waits for its
// flush. Without a flush measurement it stays as configured.
func TestLimitFollowsWhatCommitsWaitOn(t *testing.T) {
	v := newInflightLimit(1, 8, 3)
	limit := func() int { l, _, _ := v.snapshot(); return l }
	run := func(rtt time.Duration) { // a bundle taken and finished
		if !v.tryAcquire(make(chan struct{}, 1)) {
			t.Fatal("no permit free")
		}
		v.release(rtt, true, false)
	}
	for i := 0; i < 50; i++ {
		run(2 * time.Millisecond)
	}
	if limit() != 3 {
		t.Fatalf("limit %d without a flush measurement, want the configured 3", limit())
	}
	for _, c := range []struct {
		name        string
		flush, call time.Duration
		want        int
	}{
		{"a fast disk, a bundle of work", 70 * time.Microsecond, 1100 * time.Microsecond, 1},
		{"a slow disk, as much work", time.Millisecond, 2 * time.Millisecond, 2},
		{"a slow disk, little work", time.Millisecond, 1400 * time.Microsecond, 3},
		{"a flush that is all of the call", time.Millisecond, time.Millisecond, 8},
	} {
		v = newInflightLimit(1, 8, 3) // a disk of its own: F is the lowest recent reading
		for r := 0; r < 8; r++ {      // the limit rises by one a reading
			v.flushed(c.flush)
			for i := 0; i < 100; i++ { // the moving average settles
				run(c.call)
			}
		}
		if limit() != c.want {
			t.Errorf("%s (flush %s, call %s): limit %d, want %d", c.name, c.flush, c.call, limit(), c.want)
		}
	}
	v.flushed(70 * time.Microsecond)
	before := limit()
	if !v.tryAcquire(make(chan struct{}, 1)) {
		t.Fatal("no permit free")
	}
	v.release(time.Millisecond, true, true) // a failed bundle
	if limit() >= before && before > 1 {
		t.Fatalf("a failed bundle left the limit at %d", limit())
	}
	before = limit()
	v.release(0, false, false) // an unsampled release changes nothing
	if limit() != before {
		t.Fatalf("an unsampled release moved the limit %d -> %d", before, limit())
	}
}

// A flush measurement that raises the limit wakes the shards waiting for a
// permit at once.
func TestHigherLimitWakesWaiters(t *testing.T) {
	v := newInflightLimit(1, 4, 1)
	if !v.tryAcquire(make(chan struct{}, 1)) {
		t.Fatal("no permit free")
	}
	v.release(time.Millisecond, true, false)
	if !v.tryAcquire(make(chan struct{}, 1)) {
		t.Fatal("no permit free")
	}
	kick := make(chan struct{}, 1)
	if v.tryAcquire(kick) {
		t.Fatal("a second permit at limit 1")
	}
	v.flushed(900 * time.Microsecond) // the call is all flush: the limit rises
	select {
	case <-kick:
	default:
		t.Fatal("the waiter was not woken")
	}
	if !v.tryAcquire(kick) {
		t.Fatal("no second permit after the limit rose")
	}
}

// pass keeps a finished bundle's permit for its holder's next bundle while
// the limit allows the permits in use, and wakes nobody; when the limit fell
// below them it releases the permit as release does, waking the waiters.
func TestPassKeepsThePermitWithinTheLimit(t *testing.T) {
	v := newInflightLimit(1, 4, 2)
	for i := 0; i < 2; i++ {
		if !v.tryAcquire(make(chan struct{}, 1)) {
			t.Fatal("no permit free")
		}
	}
	kick := make(chan struct{}, 1)
	if v.tryAcquire(kick) {
		t.Fatal("a third permit at limit 2")
	}
	if !v.pass(time.Millisecond, false) {
		t.Fatal("pass gave the permit back at limit 2 with 2 in use")
	}
	if _, _, inUse := v.snapshot(); inUse != 2 {
		t.Fatalf("%d permits in use after pass, want 2", inUse)
	}
	select {
	case <-kick:
		t.Fatal("pass woke a waiter though it kept the permit")
	default:
	}
	v.setMax(1) // the limit falls under the permits in use
	if v.pass(time.Millisecond, false) {
		t.Fatal("pass kept a permit over the limit")
	}
	if _, _, inUse := v.snapshot(); inUse != 1 {
		t.Fatalf("%d permits in use after pass gave one back, want 1", inUse)
	}
	select {
	case <-kick:
	default:
		t.Fatal("the waiter was not woken when the permit went back")
	}
}

// SetShare caps each of n bridges at its share of InFlightMax, never below
// InFlightMin, and lifts the cap again when the others leave.
func TestShareDividesTheCeiling(t *testing.T) {
	f, err := New(Config{Sink: newMemSink(t), InFlightMin: 1, InFlightMax: 16, InFlightInitial: 16})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ n, ceiling, limitAtMost int }{{1, 16, 16}, {2, 8, 8}, {3, 6, 6}, {40, 1, 1}, {1, 16, 1}} {
		f.SetShare(c.n)
		st := f.Stats()
		if st.InFlightCeiling != c.ceiling || st.InFlightLimit > c.limitAtMost {
			t.Fatalf("share %d: ceiling %d limit %d, want ceiling %d limit ≤ %d", c.n, st.InFlightCeiling, st.InFlightLimit, c.ceiling, c.limitAtMost)
		}
	}
}

// The deprecated Vegas names of the bounds still set them, the new names win
// over them, and Stats reports the limit under both names.
func TestOldNamesOfTheBoundsStillWork(t *testing.T) {
	for _, c := range []struct {
		cfg         Config
		limit, ceil int
	}{
		{Config{VegasMax: 3, VegasInitial: 3}, 3, 3},
		{Config{VegasMax: 3, VegasInitial: 3, InFlightMax: 5, InFlightInitial: 4}, 4, 5},
	} {
		c.cfg.Sink = newMemSink(t)
		f, err := New(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		st := f.Stats()
		if st.InFlightLimit != c.limit || st.InFlightCeiling != c.ceil || st.VegasLimit != c.limit || st.VegasCeiling != c.ceil {
			t.Fatalf("config %+v: stats %+v, want limit %d ceiling %d", c.cfg, st, c.limit, c.ceil)
		}
	}
}

// With a yield, a bundle's permit stays taken after its verdicts are out
// (the other bridges' turn); without one it is back before them.
func TestYieldHoldsThePermitAfterTheCommit(t *testing.T) {
	sink := newMemSink(t)
	sink.delay = func(int) time.Duration { return 20 * time.Millisecond }
	f := startFusion(t, sink, func(c *Config) { c.InFlightMax, c.InFlightInitial = 1, 1 })
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
	testkit.WaitFor(t, "the held permit to come back", 10*time.Second, func() bool { return f.Stats().PermitsInUse == 0 })
	if busy := f.Stats().Busy; busy < 40*time.Millisecond {
		t.Fatalf("busy %v after two 20 ms bundles", busy)
	}
}

// F is the lowest of the recent readings: one taken while commits queue
// ahead of it does not raise the limit.
func TestFlushIsTheLowestRecentReading(t *testing.T) {
	v := newInflightLimit(1, 8, 1)
	v.flushed(time.Millisecond)
	v.flushed(3 * time.Millisecond)
	if f, _ := v.flushReading(); f != time.Millisecond {
		t.Fatalf("F %s after readings of 1 ms and 3 ms", f)
	}
	for i := 0; i < flushReadings; i++ {
		v.flushed(2 * time.Millisecond)
	}
	if f, _ := v.flushReading(); f != 2*time.Millisecond {
		t.Fatalf("F %s once the 1 ms reading is older than the last %d", f, flushReadings)
	}
}

// The limit rises by one a flush reading, however far below its target it
// is, and falls to the target at once.
func TestLimitRisesSlowlyFallsAtOnce(t *testing.T) {
	v := newInflightLimit(1, 8, 1)
	limit := func() int { l, _, _ := v.snapshot(); return l }
	if !v.tryAcquire(make(chan struct{}, 1)) {
		t.Fatal("no permit free")
	}
	v.release(time.Millisecond, true, false) // L = 1 ms
	for want := 2; want <= 8; want++ {
		v.flushed(time.Millisecond) // all of the call is the flush: target 8
		if limit() != want {
			t.Fatalf("after %d readings: limit %d, want %d", want-1, limit(), want)
		}
	}
	for i := 0; i < 60; i++ { // calls of 10 ms: W = 9 ms, target 1
		if !v.tryAcquire(make(chan struct{}, 1)) {
			t.Fatal("no permit free")
		}
		v.release(10*time.Millisecond, true, false)
	}
	if limit() != 1 {
		t.Fatalf("limit %d once the calls are mostly work, want 1", limit())
	}
}
