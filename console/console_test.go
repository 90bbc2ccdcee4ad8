package console

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/route"
)

// rig is a console over figures and a clock the test moves.
type rig struct {
	mu  sync.Mutex
	f   Figures
	now time.Time
	c   *Console
}

func newRig(t *testing.T, keep int) *rig {
	r := &rig{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	r.f.Members, r.f.Owned = []string{"a", "me", "z"}, []int{300, 400, 324}
	c, err := New(Config{Bridge: "me", Interval: -1, Keep: keep,
		Figures: func() Figures { r.mu.Lock(); defer r.mu.Unlock(); return r.f },
		Now:     func() time.Time { r.mu.Lock(); defer r.mu.Unlock(); return r.now }})
	if err != nil {
		t.Fatal(err)
	}
	r.c = c
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return r
}

// step moves the clock by d, applies change to the figures and samples.
func (r *rig) step(d time.Duration, change func(f *Figures)) {
	r.mu.Lock()
	r.now = r.now.Add(d)
	change(&r.f)
	r.mu.Unlock()
	r.c.Sample()
}

// Each interval's rates come from the counters' growth over its length;
// segments per commit are 0 without a commit; the history keeps the last
// Keep intervals, oldest first; the answer carries the figures now and
// every bridge's share of the buckets.
func TestOverviewHistory(t *testing.T) {
	r := newRig(t, 3)
	if o := r.c.Overview(); len(o.History) != 0 {
		t.Fatalf("history before a second sample: %+v", o.History)
	}
	r.step(2*time.Second, func(f *Figures) {
		f.Pushed, f.Consumed, f.Commits, f.Segments, f.Flush = 100, 40, 4, 10, 3*time.Millisecond
	})
	r.step(2*time.Second, func(f *Figures) {})                                               // nothing happened
	r.step(4*time.Second, func(f *Figures) { f.Pushed, f.Commits, f.Segments = 300, 5, 13 }) // 200 in 4 s, 3 segments in 1 commit
	o := r.c.Overview()
	type pt struct{ push, cons, spc, flush float64 }
	want := []pt{{50, 20, 2.5, 3}, {0, 0, 0, 3}, {50, 0, 3, 3}}
	if len(o.History) != len(want) {
		t.Fatalf("history %+v", o.History)
	}
	for i, w := range want {
		h := o.History[i]
		if (pt{h.PushedPerSecond, h.ConsumedPerSecond, h.SegmentsPerCommit, h.FlushMs}) != w {
			t.Errorf("point %d: %+v, want %+v", i, h, w)
		}
	}
	r.step(2*time.Second, func(f *Figures) { f.Pushed = 320 })
	o = r.c.Overview()
	if len(o.History) != 3 || o.History[0].SegmentsPerCommit != 0 || o.History[2].PushedPerSecond != 10 ||
		!o.History[0].Time.Before(o.History[1].Time) || !o.History[1].Time.Before(o.History[2].Time) || !o.History[2].Time.Equal(r.now) {
		t.Fatalf("after the ring turned: %+v", o.History)
	}
	if o.Totals.Pushed != 320 || o.Totals.Commits != 5 || o.Totals.Segments != 13 || o.Totals.Consumed != 40 || o.Bridge != "me" || !o.Time.Equal(r.now) {
		t.Fatalf("figures: %+v", o)
	}
	if o.Buckets != 1024 || len(o.Bridges) != 3 || o.Bridges[1].ID != "me" || !o.Bridges[1].Self || o.Bridges[0].Self || o.Bridges[1].Buckets != 400 {
		t.Fatalf("bridges: %d %+v", o.Buckets, o.Bridges)
	}
	// A counter that went backwards counts as no change.
	r.step(time.Second, func(f *Figures) { f.Pushed = 1 })
	if h := r.c.Overview().History; h[2].PushedPerSecond != 0 {
		t.Fatalf("a counter going backwards: %+v", h[2])
	}
}

// The route answers the overview as JSON to any tenant.
func TestOverviewRoute(t *testing.T) {
	r := newRig(t, 300)
	r.step(2*time.Second, func(f *Figures) { f.Pushed, f.SpoolHealthy, f.InFlightLimit = 8, true, 4 })
	routes := r.c.Routes()
	if len(routes) != 1 || routes[0].Method != "GET" || routes[0].Pattern != "/api/v1/bridge/overview" || routes[0].Admin {
		t.Fatalf("routes %+v", routes)
	}
	status, body := routes[0].Serve(context.Background(), [16]byte{1}, routeRequest())
	var got struct {
		Bridge  string           `json:"bridge"`
		Time    string           `json:"time"`
		Spool   map[string]any   `json:"spool"`
		Totals  map[string]int   `json:"totals"`
		History []map[string]any `json:"history"`
		Bridges []map[string]any `json:"bridges"`
		Limit   int              `json:"inFlightLimit"`
	}
	if status != 200 || json.Unmarshal(body, &got) != nil || got.Bridge != "me" || got.Time != "2026-01-02T03:04:07Z" ||
		got.Spool["healthy"] != true || got.Totals["pushed"] != 8 || len(got.History) != 1 || got.History[0]["pushedPerSecond"] != 4.0 ||
		len(got.Bridges) != 3 || got.Limit != 4 {
		t.Fatalf("%d %s", status, body)
	}
}

// The sampler samples on its ticks until Stop, which waits for it and may
// be called again; a second Start is refused.
func TestSamplerRunsUntilStop(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	sampled := make(chan struct{}, 100)
	c, err := New(Config{Bridge: "me", Interval: time.Millisecond, Figures: func() Figures {
		mu.Lock()
		calls++
		mu.Unlock()
		select { // never blocks the sampler: the test reads the first few
		case sampled <- struct{}{}:
		default:
		}
		return Figures{}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ { // Start's sample, then two ticks'
		<-sampled
	}
	if err := c.Start(context.Background()); err == nil {
		t.Fatal("a second Start started a second sampler")
	}
	for _, err := range []error{c.Stop(context.Background()), c.Stop(context.Background())} {
		if err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	after := calls
	mu.Unlock()
	if len(c.Overview().History) < 2 {
		t.Fatalf("history after two ticks: %+v", c.Overview().History)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != after+1 { // only Overview's own read
		t.Fatalf("sampled after Stop: %d calls, %d at Stop", calls, after)
	}
}

func routeRequest() route.Request { return route.Request{Path: func(string) string { return "" }} }
