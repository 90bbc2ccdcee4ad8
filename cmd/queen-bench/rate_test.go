package main

import (
	"context"
	"sync"
	"testing"
	"time"
)

// The schedule hands out every request once, in order of due time, evenly
// spaced at -items / -rate, and none due at or after the end, however many
// clients take from it at once.
func TestScheduleSpreadsTheRateOverTheClients(t *testing.T) {
	t.Parallel()
	start := time.Unix(1_700_000_000, 0)
	s, err := newSchedule(2000, 10, start, time.Second) // 200 requests, 5 ms apart
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	dues := map[int64]time.Time{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				n, due, ok := s.take()
				if !ok {
					return
				}
				mu.Lock()
				if _, dup := dues[n]; dup {
					t.Errorf("request %d handed out twice", n)
				}
				dues[n] = due
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(dues) != 200 {
		t.Fatalf("%d requests in a second at 2000 items/s of 10, want 200", len(dues))
	}
	for n := range int64(200) {
		if want := start.Add(time.Duration(n) * 5 * time.Millisecond); !dues[n].Equal(want) {
			t.Fatalf("request %d due at %s, want %s", n, dues[n].Sub(start), want.Sub(start))
		}
	}
	for _, bad := range []float64{0, -1} {
		if _, err := newSchedule(bad, 10, start, time.Second); err == nil {
			t.Errorf("a rate of %v must be refused", bad)
		}
	}
}

// wait answers how late a request already due is, sleeps until one that
// is not, and gives up when its context ends first.
func TestWaitSleepsUntilDueOrCountsLateness(t *testing.T) {
	t.Parallel()
	behind, ok := wait(context.Background(), time.Now().Add(-3*time.Millisecond))
	if !ok || behind < 3*time.Millisecond {
		t.Fatalf("a request due 3 ms ago: %s behind, ok %v", behind, ok)
	}
	due := time.Now().Add(20 * time.Millisecond)
	if behind, ok := wait(context.Background(), due); !ok || behind != 0 || time.Now().Before(due) {
		t.Fatalf("a request due ahead: %s behind, ok %v, woke %s early", behind, ok, time.Until(due))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := wait(ctx, time.Now().Add(time.Hour)); ok {
		t.Fatal("an ended context must stop the wait")
	}
	if _, ok := wait(ctx, time.Now().Add(-time.Second)); ok {
		t.Fatal("an ended context must stop a late request too")
	}
}

// A request counts as late when it leaves over a millisecond after its
// due time: its clients were all busy, not merely woken a little late.
func TestLatenessCountsOnlyLateSends(t *testing.T) {
	t.Parallel()
	var l lateness
	for _, d := range []time.Duration{0, 3 * time.Millisecond, 0, 2 * time.Millisecond, 500 * time.Microsecond} {
		l.record(d)
	}
	if got, want := l.String(), "2 of 5 requests sent more than 1ms after their scheduled time (the latest 3ms behind)"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestQuantiles(t *testing.T) {
	t.Parallel()
	var l []time.Duration
	for i := 200; i >= 1; i-- { // unsorted on purpose
		l = append(l, time.Duration(i)*time.Millisecond)
	}
	p50, p99, top := quantiles(l)
	if p50 != 101*time.Millisecond || p99 != 199*time.Millisecond || top != 200*time.Millisecond {
		t.Fatalf("p50 %s p99 %s max %s of 1..200 ms", p50, p99, top)
	}
	if p50, p99, top := quantiles(nil); p50 != 0 || p99 != 0 || top != 0 {
		t.Fatal("no latencies must give zeros")
	}
}
