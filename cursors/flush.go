package cursors

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// flusher makes acknowledgements durable by fused writes: it gathers the
// ack state changes of every consumer and partition for FlushWindow when a
// double ack waits for its answer, else for LazyWindow (or until FlushMax
// pairs are waiting), stores them with one CommitAcks (one statement, one
// commit, in the one lock order), and then answers the replies of the acks
// that state includes. Never one transaction per ack; plain acks, which
// nobody waits for, share a write with many more.
//
// mu guards dirty, pairs and replies: consumers mark from their own
// goroutines and from Ack callers; the loop takes them. The loop is the
// one goroutine that calls CommitAcks, one commit at a time, so a reply
// taken with a batch is answered after every earlier batch committed too.
type flusher struct {
	e      *JSEngine
	signal chan struct{} // cap 1
	full   chan struct{} // cap 1: FlushMax pairs wait, the window ends
	urgent chan struct{} // cap 1: a reply waits, a lazy window ends within FlushWindow
	done   chan struct{} // closed by close: the loop flushes what is left, then ends

	mu      sync.Mutex
	dirty   map[*consumer]struct{}
	pairs   int // (consumer, partition) pairs marked since the last take
	replies []ackReply

	once sync.Once // closes done
}

func newFlusher(e *JSEngine) *flusher {
	return &flusher{e: e, signal: make(chan struct{}, 1), full: make(chan struct{}, 1), urgent: make(chan struct{}, 1), done: make(chan struct{}), dirty: map[*consumer]struct{}{}}
}

// mark notes that c has ack state of one more partition to store. Called
// under c.mu.
func (f *flusher) mark(c *consumer) {
	f.mu.Lock()
	f.dirty[c] = struct{}{}
	f.pairs++
	full := f.pairs >= f.e.cfg.FlushMax
	f.mu.Unlock()
	f.poke()
	if full {
		select {
		case f.full <- struct{}{}:
		default:
		}
	}
}

// ackReply is a tenant's double ack to answer.
type ackReply struct {
	tenant  tenancy.TenantID
	subject string
}

// reply queues an answer to send after the next commit.
func (f *flusher) reply(tenant tenancy.TenantID, subject string) {
	f.mu.Lock()
	f.replies = append(f.replies, ackReply{tenant, subject})
	f.mu.Unlock()
	f.poke()
	select {
	case f.urgent <- struct{}{}:
	default:
	}
}

func (f *flusher) poke() {
	select {
	case f.signal <- struct{}{}:
	default:
	}
}

func (f *flusher) close() { f.once.Do(func() { close(f.done) }) }

func (f *flusher) loop() {
	defer f.e.bg.Done()
	for {
		select {
		case <-f.signal:
		case <-f.done:
			f.final()
			return
		}
		f.mu.Lock()
		n, waiting := f.pairs, len(f.replies) > 0
		f.mu.Unlock()
		if n < f.e.cfg.FlushMax {
			// The window: acks of other consumers and partitions join.
			window := f.e.cfg.LazyWindow
			if waiting {
				window = f.e.cfg.FlushWindow
			}
			f.wait(window)
		}
		if !f.once1() {
			select {
			case <-f.done:
			case <-time.After(retryPause):
			}
			f.poke()
		}
	}
}

// wait is the window: it ends early when FlushMax pairs wait, at Stop,
// and a lazy one within FlushWindow once a reply waits. A window that is
// already FlushWindow (a reply waited when it began) is not cut by the
// reply that asked for it, so double acks arriving together still share
// a write.
func (f *flusher) wait(window time.Duration) {
	urgent := f.urgent
	if window <= f.e.cfg.FlushWindow {
		select {
		case <-urgent:
		default:
		}
		urgent = nil // never ready: only the timer, full and done end it
	}
	t := time.NewTimer(window)
	defer t.Stop()
	select {
	case <-t.C:
		return
	case <-f.full:
		return
	case <-f.done:
		return
	case <-urgent:
	}
	t.Reset(f.e.cfg.FlushWindow)
	select {
	case <-t.C:
	case <-f.full:
	case <-f.done:
	}
}

// final stores what is left at Stop; a failing Store gets a few tries.
func (f *flusher) final() {
	for i := 0; i < 3; i++ {
		if f.once1() {
			return
		}
	}
}

// once1 runs one flush: takes the marked consumers' state, commits it,
// answers the replies. False when the commit failed (the state is marked
// again and the replies wait for the next one).
func (f *flusher) once1() bool {
	f.mu.Lock()
	dirty, replies := f.dirty, f.replies
	f.dirty, f.replies, f.pairs = map[*consumer]struct{}{}, nil, 0
	f.mu.Unlock()
	var ups []AckUpdate
	var owners []*consumer
	for c := range dirty {
		for _, u := range c.takeUpdates() {
			ups = append(ups, u)
			owners = append(owners, c)
		}
	}
	if len(ups) > 0 {
		// The one lock order: (partition id, group) ascending.
		idx := make([]int, len(ups))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, b int) bool {
			x, y := &ups[idx[a]], &ups[idx[b]]
			if x.PartitionID != y.PartitionID {
				return x.PartitionID < y.PartitionID
			}
			return owners[idx[a]].key.name < owners[idx[b]].key.name
		})
		sorted := make([]AckUpdate, len(ups))
		sortedOwners := make([]*consumer, len(ups))
		for i, j := range idx {
			sorted[i], sortedOwners[i] = ups[j], owners[j]
		}
		f.e.nameDeadLetters(sorted)
		err := f.e.call(func(ctx context.Context) error { return f.e.cfg.Store.CommitAcks(ctx, sorted) })
		f.e.stats.flushes.Add(1)
		if err != nil {
			f.e.stats.flushErrors.Add(1)
			f.e.cfg.Logger.Warn().Err(err).Int("updates", len(sorted)).Msg("acknowledgements not stored; trying again")
			for i := range sorted {
				sortedOwners[i].restore(&sorted[i])
			}
			f.mu.Lock()
			f.replies = append(replies, f.replies...)
			f.mu.Unlock()
			return false
		}
		f.e.stats.flushedUpdates.Add(uint64(len(sorted)))
	}
	for _, r := range replies {
		f.e.publish(r.tenant, r.subject, "", nil, nil)
	}
	return true
}

// takeUpdates is the ack state of the consumer's changed partitions, for
// the flusher; its dead letters move into the updates.
func (c *consumer) takeUpdates() []AckUpdate {
	c.mu.Lock()
	defer c.mu.Unlock()
	dirty := c.dirtyParts
	c.dirtyParts = c.dirtyParts[:0]
	for _, p := range dirty {
		p.dirty = false
	}
	if c.deleted {
		return nil
	}
	out := make([]AckUpdate, 0, len(dirty))
	for _, p := range dirty {
		u := AckUpdate{ConsumerID: c.id, PartitionID: p.id, Floor: p.floor, Delivered: p.next, Dead: p.dead}
		p.dead = nil
		for o, s := range p.slots() {
			if s.acked {
				u.Acked = append(u.Acked, o) // ascending, as the window is
			}
			// A first delivery is in Delivered; only more are counted.
			if s.count >= 2 {
				if u.Deliveries == nil {
					u.Deliveries = map[int64]int{}
				}
				u.Deliveries[o] = int(s.count)
			}
		}
		out = append(out, u)
	}
	return out
}

// restore marks an update's partition again after a failed commit, and
// puts its dead letters back.
func (c *consumer) restore(u *AckUpdate) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.parts[u.PartitionID]
	if p == nil || c.deleted {
		return
	}
	p.dead = append(u.Dead, p.dead...)
	if p.dirty {
		c.e.flush.mark(c) // changed again since: in the list already
	} else {
		c.dirty(p)
	}
}
