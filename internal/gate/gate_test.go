package gate

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// cancelled is a context that is already done: Wait with it reports
// whether calls are still counted, without waiting for anything.
func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// bounded is a context whose deadline only turns a hang into a failure.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestAdmitAndGoAreCountedUntilDone(t *testing.T) {
	t.Parallel()
	g := New()
	g.StartWorkers(1)
	defer g.StopWorkers()
	for range 2 {
		if !g.Admit() {
			t.Fatal("an open gate refused a call")
		}
	}
	release, ran := make(chan struct{}), make(chan struct{})
	if !g.Go(func() { <-release; close(ran); g.Done() }) {
		t.Fatal("an open gate refused work")
	}
	for i := 0; i < 2; i++ {
		if err := g.Wait(cancelled()); !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait with %d calls admitted and not done: %v", 3-i, err)
		}
		g.Done()
	}
	if err := g.Wait(cancelled()); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait while queued work runs: %v", err)
	}
	close(release)
	if err := g.Wait(bounded(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ran:
	default:
		t.Error("Wait returned before the work that was counted ran")
	}
	g.Close()
}

// Wait gives up when its context ends, while a call is still counted.
func TestWaitHonoursItsContext(t *testing.T) {
	t.Parallel()
	g := New()
	g.Admit()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Wait(ctx) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Wait: %v", err)
	}
	g.Done()
}

func TestAClosedGateAdmitsNothing(t *testing.T) {
	t.Parallel()
	for _, workers := range []int{0, 2} {
		g := New()
		if workers > 0 {
			g.StartWorkers(workers)
		}
		if g.Closed() {
			t.Fatal("a new gate is closed")
		}
		g.Close()
		g.Close() // idempotent
		ran := false
		if !g.Closed() || g.Admit() || g.Go(func() { ran = true; g.Done() }) {
			t.Errorf("%d workers: a closed gate admitted a call", workers)
		}
		if err := g.Wait(bounded(t)); err != nil {
			t.Errorf("Wait with nothing admitted: %v", err)
		}
		g.StopWorkers()
		if ran {
			t.Error("work refused by a closed gate ran")
		}
	}
}

// goroutineWaiting polls the goroutines' stacks until one this test
// started is in fn with the wait reason (e.g. "chan send"), or stop is
// closed first (a bounded poll: it fails instead of hanging). Only this
// test's goroutines count: a parallel test's goroutine may wait in the
// same function.
func goroutineWaiting(t *testing.T, fn, reason string, stop <-chan struct{}) {
	t.Helper()
	mine := "gate." + t.Name() + "."
	deadline := time.Now().Add(time.Minute)
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			header, _, _ := strings.Cut(g, "\n")
			if strings.Contains(header, "["+reason) && strings.Contains(g, fn) && strings.Contains(g, mine) {
				return
			}
		}
		select {
		case <-stop:
			t.Fatalf("ended before a goroutine waited in %s on %s", fn, reason)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no goroutine waited in %s on %s", fn, reason)
		}
		time.Sleep(time.Millisecond)
	}
}

// A Go that waits for room in a full queue was admitted before a Close
// that comes after it: Close waits for it to be queued, the work runs, and
// Wait counts it. Nothing admitted is lost, nothing after Close admitted.
func TestCloseWaitsForAGoBlockedOnAFullQueue(t *testing.T) {
	t.Parallel()
	g := New()
	g.StartWorkers(1) // room for 4 waiting calls
	var mu sync.Mutex
	var ran []int
	release, started := make(chan struct{}), make(chan struct{})
	work := func(i int) func() {
		return func() {
			if i == 0 {
				close(started)
				<-release
			}
			mu.Lock()
			ran = append(ran, i)
			mu.Unlock()
			g.Done()
		}
	}
	if !g.Go(work(0)) {
		t.Fatal("refused")
	}
	<-started // the worker is busy: the queue's room is all left
	for i := 1; i <= 4; i++ {
		if !g.Go(work(i)) {
			t.Fatal("refused")
		}
	}
	admitted := make(chan bool, 1)
	go func() { admitted <- g.Go(work(5)) }()
	goroutineWaiting(t, "gate.(*Gate).Go(", "chan send", nil)

	closed := make(chan struct{})
	go func() { g.Close(); close(closed) }()
	goroutineWaiting(t, "gate.(*Gate).Close(", "sync.RWMutex.Lock", closed)
	if g.Closed() {
		t.Fatal("the gate closed while a Go it admitted waited for room")
	}

	close(release)
	<-closed
	if !<-admitted {
		t.Error("the Go admitted before Close was refused")
	}
	if g.Go(work(6)) || g.Admit() {
		t.Error("admitted after Close")
	}
	if err := g.Wait(bounded(t)); err != nil {
		t.Fatal(err)
	}
	g.StopWorkers()
	if want := []int{0, 1, 2, 3, 4, 5}; !slices.Equal(ran, want) {
		t.Errorf("ran %v, want %v", ran, want)
	}
}

// StopWorkers lets the workers run what is queued before they end.
func TestStopWorkersRunsWhatWasQueued(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := New()
		g.StartWorkers(1)
		release := make(chan struct{})
		var ran []int
		for i := 0; i < 5; i++ {
			if !g.Go(func() {
				if i == 0 {
					<-release
				}
				ran = append(ran, i) // one worker: no two run at once
				g.Done()
			}) {
				t.Fatal("refused")
			}
		}
		synctest.Wait() // the worker holds the first; four are queued
		if len(ran) != 0 {
			t.Fatalf("ran %v before the first was released", ran)
		}
		g.Close()
		stopped := make(chan struct{})
		go func() { g.StopWorkers(); close(stopped) }()
		close(release)
		<-stopped
		if !slices.Equal(ran, []int{0, 1, 2, 3, 4}) {
			t.Errorf("ran %v", ran)
		}
	})
}

func TestStopWorkersWithoutWorkers(t *testing.T) {
	t.Parallel()
	g := New()
	g.Close()
	g.StopWorkers() // nothing to stop: must not block or panic
}
