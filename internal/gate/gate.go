package gate

import (
	"context"
	"sync"
	"sync/atomic"
)

// Gate admits calls until Close. Admitting and closing are ordered by a
// lock: a call is admitted under it held shared, after checking that the
// gate is open; Close takes it exclusively to close. So once Close
// returns, no call is admitted and no work is queued any more, and Wait
// waits for exactly the calls admitted before.
type Gate struct {
	mu      sync.RWMutex
	closed  atomic.Bool
	calls   sync.WaitGroup // admitted calls not yet Done
	work    chan func()
	workers sync.WaitGroup
}

// New is an open gate; StartWorkers gives it a worker pool.
func New() *Gate { return &Gate{} }

// StartWorkers starts n workers, which run what Go queues, with room for
// 4n waiting calls. Call it once, before Go.
func (g *Gate) StartWorkers(n int) {
	g.work = make(chan func(), 4*n)
	for i := 0; i < n; i++ {
		g.workers.Add(1)
		go func() {
			defer g.workers.Done()
			for fn := range g.work {
				fn()
			}
		}()
	}
}

// Closed reports whether Close was called.
func (g *Gate) Closed() bool { return g.closed.Load() }

// Admit counts a call that runs on its caller's goroutine, unless the gate
// is closed (then it reports false). The call must end with Done.
func (g *Gate) Admit() bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed.Load() {
		return false
	}
	g.calls.Add(1)
	return true
}

// Go counts a call and queues fn for a worker, unless the gate is closed
// (then it reports false). fn must end the call with Done. Go waits for
// room in the queue.
func (g *Gate) Go(fn func()) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed.Load() {
		return false
	}
	g.calls.Add(1)
	g.work <- fn
	return true
}

// Done ends a call that Admit or Go counted.
func (g *Gate) Done() { g.calls.Done() }

// Close admits nothing more. Idempotent.
func (g *Gate) Close() {
	g.mu.Lock()
	g.closed.Store(true)
	g.mu.Unlock()
}

// StopWorkers lets the workers finish what is queued and waits for them;
// only after Close.
func (g *Gate) StopWorkers() {
	if g.work != nil {
		close(g.work)
		g.workers.Wait()
	}
}

// Wait waits, within ctx, until every admitted call is Done.
func (g *Gate) Wait(ctx context.Context) error {
	answered := make(chan struct{})
	go func() { g.calls.Wait(); close(answered) }()
	select {
	case <-answered:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
