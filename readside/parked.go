package readside

import (
	"sync"
	"sync/atomic"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// Key names a partition of a queue of a tenant.
type Key struct {
	Tenant           tenancy.TenantID
	Queue, Partition string
}

// waiter is one parked read or pop. Its channel receives (at most one
// pending) wake; gone is set, before the wake, when its queue was deleted:
// it then answers at once, empty.
type waiter struct {
	ch   chan struct{}
	gone atomic.Bool
}

// parked holds the reads waiting for a partition. Read handlers (one
// goroutine each) park and unpark, announcers wake: a mutex guards the map,
// held only for map operations.
type parked struct {
	mu    sync.Mutex
	m     map[Key]map[*waiter]struct{}
	n     atomic.Int64  // reads parked now
	wakes atomic.Uint64 // partition wake events
}

func newParked() *parked { return &parked{m: map[Key]map[*waiter]struct{}{}} }

// park registers a read.
func (p *parked) park(k Key) *waiter {
	w := &waiter{ch: make(chan struct{}, 1)}
	p.mu.Lock()
	set := p.m[k]
	if set == nil {
		set = map[*waiter]struct{}{}
		p.m[k] = set
	}
	set[w] = struct{}{}
	p.mu.Unlock()
	p.n.Add(1)
	return w
}

func (p *parked) unpark(k Key, w *waiter) {
	p.mu.Lock()
	if set := p.m[k]; set != nil {
		delete(set, w)
		if len(set) == 0 {
			delete(p.m, k)
		}
	}
	p.mu.Unlock()
	p.n.Add(-1)
}

func (w *waiter) wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// wake wakes every read parked on k, and every pop parked on k's queue
// (the key with Partition "": partition names are never empty).
func (p *parked) wake(k Key) {
	p.wakes.Add(1)
	p.mu.Lock()
	for w := range p.m[k] {
		w.wake()
	}
	for w := range p.m[Key{Tenant: k.Tenant, Queue: k.Queue}] {
		w.wake()
	}
	p.mu.Unlock()
}

// drop makes every read and pop parked on a queue answer now: the queue
// was deleted. It walks every parked key, which is fine for a rare call.
func (p *parked) drop(tenant tenancy.TenantID, queue string) {
	p.mu.Lock()
	for k, set := range p.m {
		if k.Tenant == tenant && k.Queue == queue {
			for w := range set {
				w.gone.Store(true)
				w.wake()
			}
		}
	}
	p.mu.Unlock()
}

// keySet collects partitions marked since it was last taken: the hot-list
// (taken once per tick) and the peer announcements (taken by the publisher).
// Announcers mark from many goroutines and one loop takes: a mutex guards
// the set.
type keySet struct {
	mu      sync.Mutex
	pending map[Key]struct{}
	signal  chan struct{} // cap 1: something is pending
}

func newKeySet() *keySet {
	return &keySet{pending: map[Key]struct{}{}, signal: make(chan struct{}, 1)}
}

func (h *keySet) mark(k Key) {
	h.mu.Lock()
	h.pending[k] = struct{}{}
	h.mu.Unlock()
	select {
	case h.signal <- struct{}{}:
	default:
	}
}

func (h *keySet) take() map[Key]struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.pending) == 0 {
		return nil
	}
	out := h.pending
	h.pending = map[Key]struct{}{}
	return out
}
