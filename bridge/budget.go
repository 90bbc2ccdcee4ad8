package bridge

import (
	"context"
	"sync"
	"time"
)

// bodyBudget bounds the bytes of request bodies held in memory at once
// (Config.MaxInflightBytes), over HTTP and NATS alike. A request takes its
// bytes as its body arrives (HTTP) or as it is accepted (NATS) and gives
// them back when it is answered. Request goroutines take and give: a mutex
// guards the count, and waiters wait on a channel that a release closes.
type bodyBudget struct {
	mu      sync.Mutex
	limit   int64
	free    int64
	waiting int           // takers waiting on freed
	freed   chan struct{} // closed (and replaced) when bytes come back while someone waits
}

func newBodyBudget(limit int64) *bodyBudget {
	return &bodyBudget{limit: limit, free: limit, freed: make(chan struct{})}
}

// tryTake takes n bytes if they are free now.
func (b *bodyBudget) tryTake(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.takeLocked(n)
}

// takeLocked takes n bytes if they are free; b.mu is held. A request
// larger than the whole budget takes all of it.
func (b *bodyBudget) takeLocked(n int64) bool {
	n = min(n, b.limit)
	if b.free < n {
		return false
	}
	b.free -= n
	return true
}

// take takes n bytes, waiting up to wait (or ctx) for them to come free.
func (b *bodyBudget) take(ctx context.Context, n int64, wait time.Duration) bool {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		b.mu.Lock()
		if b.takeLocked(n) {
			b.mu.Unlock()
			return true
		}
		freed := b.freed
		b.waiting++
		b.mu.Unlock()
		var ok bool
		select {
		case <-freed:
			ok = true
		case <-timer.C:
		case <-ctx.Done():
		}
		b.mu.Lock()
		b.waiting--
		b.mu.Unlock()
		if !ok {
			return false
		}
	}
}

// inUse is the bytes taken now.
func (b *bodyBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limit - b.free
}

// give returns n bytes taken earlier.
func (b *bodyBudget) give(n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.free = min(b.free+min(n, b.limit), b.limit)
	if b.waiting > 0 { // wake them; without waiters no channel is spent
		close(b.freed)
		b.freed = make(chan struct{})
	}
	b.mu.Unlock()
}
