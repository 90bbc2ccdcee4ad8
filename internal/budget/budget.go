package budget

import (
	"context"
	"sync"
	"time"
)

// Bytes bounds the bytes held at once by many goroutines, such as the
// request bodies a bridge holds in memory. A taker takes bytes before it
// holds them and gives them back when done. Takers and givers run on any
// goroutine: a mutex guards the count, and waiters wait on a channel that
// a release closes.
type Bytes struct {
	mu      sync.Mutex
	limit   int64
	free    int64
	waiting int           // takers waiting on freed
	freed   chan struct{} // closed (and replaced) when bytes come back while someone waits
}

// New is a budget of limit bytes.
func New(limit int64) *Bytes {
	return &Bytes{limit: limit, free: limit, freed: make(chan struct{})}
}

// TryTake takes n bytes if they are free now.
func (b *Bytes) TryTake(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.takeLocked(n)
}

// takeLocked takes n bytes if they are free; b.mu is held. A request
// larger than the whole budget takes all of it.
func (b *Bytes) takeLocked(n int64) bool {
	n = min(n, b.limit)
	if b.free < n {
		return false
	}
	b.free -= n
	return true
}

// Take takes n bytes, waiting up to wait (or ctx) for them to come free.
func (b *Bytes) Take(ctx context.Context, n int64, wait time.Duration) bool {
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

// InUse is the bytes taken now.
func (b *Bytes) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limit - b.free
}

// Give returns n bytes taken earlier.
func (b *Bytes) Give(n int64) {
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
