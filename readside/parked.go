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

// parked holds the reads waiting for a partition. Read handlers (one
// goroutine each) park and unpark, announcers wake: a mutex guards the map,
// held only for map operations.
type parked struct {
	mu    sync.Mutex
	m     map[Key]map[chan struct{}]struct{}
	n     atomic.Int64  // reads parked now
	wakes atomic.Uint64 // partition wake events
}

func newParked() *parked { return &parked{m: map[Key]map[chan struct{}]struct{}{}} }

// park registers a read; its channel receives (at most one pending) wake.
func (p *parked) park(k Key) chan struct{} {
	ch := make(chan struct{}, 1)
	p.mu.Lock()
	set := p.m[k]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		p.m[k] = set
	}
	set[ch] = struct{}{}
	p.mu.Unlock()
	p.n.Add(1)
	return ch
}

func (p *parked) unpark(k Key, ch chan struct{}) {
	p.mu.Lock()
	if set := p.m[k]; set != nil {
		delete(set, ch)
		if len(set) == 0 {
			delete(p.m, k)
		}
	}
	p.mu.Unlock()
	p.n.Add(-1)
}

// wake wakes every read parked on k, and every pop parked on k's queue
// (the key with Partition "": partition names are never empty).
func (p *parked) wake(k Key) {
	p.wakes.Add(1)
	p.mu.Lock()
	for ch := range p.m[k] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	for ch := range p.m[Key{Tenant: k.Tenant, Queue: k.Queue}] {
		select {
		case ch <- struct{}{}:
		default:
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
