package procs

import (
	"context"
	"sync"
	"testing"
	"time"
)

// rig is a Controller whose Set is recorded and whose steps the test feeds.
type rig struct {
	c   *Controller
	mu  sync.Mutex
	set []int
}

func newRig(t *testing.T, max int) *rig {
	t.Helper()
	r := &rig{}
	c, err := New(Config{Max: max, Tick: time.Hour, CPU: func() time.Duration { return 0 }, Set: func(n int) {
		r.mu.Lock()
		r.set = append(r.set, n)
		r.mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	r.c = c
	return r
}

// steps feeds n ticks of the same load and returns the Ps after them.
func (r *rig) steps(n int, load float64) int {
	for i := 0; i < n; i++ {
		r.c.step(load)
	}
	return r.c.Procs()
}

// A light load (a lone client: 0.3 of a core on one P, 0.5 on two) lowers
// the Ps to one, but only at the end of a window of calmTicks ticks.
func TestLightLoadLowersAtTheWindowsEnd(t *testing.T) {
	r := newRig(t, 2)
	if p := r.steps(calmTicks-1, 0.5); p != 2 {
		t.Fatalf("after %d light ticks: %d Ps, want 2 still", calmTicks-1, p)
	}
	if p := r.steps(1, 0.5); p != 1 {
		t.Fatalf("after %d light ticks: %d Ps, want 1", calmTicks, p)
	}
	if len(r.set) != 1 || r.set[0] != 1 {
		t.Fatalf("Set calls %v, want [1]", r.set)
	}
	if p := r.steps(100, 0); p != 1 {
		t.Fatalf("an idle process: %d Ps, want 1 (never fewer)", p)
	}
}

// The window's mean decides: light ticks with a few busy ones among them
// stay, when their mean needs the Ps; noisy ticks of a light load come
// down.
func TestTheWindowsMeanDecides(t *testing.T) {
	r := newRig(t, 2)
	for i := 0; i < calmTicks; i++ {
		load := 0.3
		if i%4 == 0 {
			load = 1.5 // a burst the two Ps carried
		}
		r.steps(1, load)
	}
	if p := r.c.Procs(); p != 2 {
		t.Fatalf("a window with bursts (mean 0.6): %d Ps, want 2", p)
	}
	for i := 0; i < calmTicks; i++ {
		load := 0.4
		if i%2 == 0 {
			load = 0.62 // noise above lowerAt
		}
		r.steps(1, load)
	}
	if p := r.c.Procs(); p != 1 {
		t.Fatalf("a light load with noisy ticks (mean 0.51): %d Ps, want 1", p)
	}
}

// A load beyond what the Ps carry raises them at once, doubling, never
// beyond Max, and starts a new window; a load the Ps carry keeps them.
func TestHeavyLoadRaisesAtOnce(t *testing.T) {
	r := newRig(t, 6)
	if p := r.steps(calmTicks, 0.2); p != 1 {
		t.Fatalf("lowered to %d, want 1", p)
	}
	if p := r.steps(1, 0.7); p != 2 {
		t.Fatalf("0.7 of a core on one P: %d Ps, want 2", p)
	}
	if p := r.steps(1, 1.5); p != 4 {
		t.Fatalf("1.5 cores on two Ps: %d Ps, want 4", p)
	}
	if p := r.steps(1, 3.9); p != 6 {
		t.Fatalf("3.9 cores on four Ps: %d Ps, want Max 6", p)
	}
	if p := r.steps(1, 6); p != 6 {
		t.Fatalf("6 cores: %d Ps, want Max 6", p)
	}
	// 2.4 cores: 5 Ps at lowerAt carry it; after a window the Ps are 5,
	// and 2.4 on 5 is below raiseAt: they stay.
	if p := r.steps(calmTicks, 2.4); p != 5 {
		t.Fatalf("2.4 cores for a window: %d Ps, want 5", p)
	}
	if p := r.steps(3*calmTicks, 2.4); p != 5 {
		t.Fatalf("the same load later: %d Ps, want 5", p)
	}
}

// A load under the raise threshold on one P stays on one P, and a load that
// needs two on two stays on two: no flapping between the sizes.
func TestNoFlapping(t *testing.T) {
	r := newRig(t, 2)
	r.steps(calmTicks, 0.1)
	if p := r.steps(3*calmTicks, 0.58); p != 1 {
		t.Fatalf("0.58 of a core on one P: %d Ps, want 1", p)
	}
	r.steps(1, 0.65)
	if p := r.steps(3*calmTicks, 0.58); p != 2 {
		t.Fatalf("0.58 of a core on two Ps: %d Ps, want 2", p)
	}
	if len(r.set) != 2 {
		t.Fatalf("Set calls %v, want two", r.set)
	}
}

// The loop reads the process's CPU on its ticks and applies what step
// decides; Stop ends it and gives back Max.
func TestLoopLowersAnIdleProcessAndStopRestores(t *testing.T) {
	var mu sync.Mutex
	var applied []int
	lowered := make(chan struct{})
	c, err := New(Config{Max: 2, Tick: time.Millisecond, CPU: func() time.Duration { return 0 }, Set: func(n int) {
		mu.Lock()
		applied = append(applied, n)
		mu.Unlock()
		if n == 1 {
			close(lowered)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err == nil {
		t.Fatal("a second Start was accepted")
	}
	<-lowered // an idle process: a window of no CPU
	for i := 0; i < 2; i++ {
		if err := c.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(applied) != 2 || applied[0] != 1 || applied[1] != 2 || c.Procs() != 2 {
		t.Fatalf("applied %v, Procs %d; want [1 2], 2", applied, c.Procs())
	}
}

// The process's own CPU time grows with work it does.
func TestProcessCPUGrows(t *testing.T) {
	before := processCPU()
	x := 0
	for i := 0; i < 50_000_000; i++ {
		x ^= i * 7
	}
	if after := processCPU(); after <= before || x == 1 {
		t.Fatalf("CPU time %v then %v", before, after)
	}
}

func TestConfigRefused(t *testing.T) {
	for _, cfg := range []Config{{Max: -1}, {Tick: -time.Second}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}
