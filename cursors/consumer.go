package cursors

import (
	"context"
	"sort"
	"sync"
	"time"
)

// consumer is one consumer's live state on its owning bridge.
type consumer struct {
	e             *JSEngine
	key           consumerKey
	id            int64    // the definition's id (def.ID), fixed: read without mu
	streamFilters []string // the stream's filters, to rebuild subjects

	kick chan struct{} // cap 1: something changed, run fills
	quit chan struct{} // closed by stop
	done chan struct{} // closed when run returned
	// settle takes a channel that run closes after its next whole pass:
	// a point where everything asked before it has been acted on.
	settle chan chan struct{}

	// hotMu guards the commits handed over by the hook (so that the
	// fusion's flush goroutine never waits for a delivery in progress).
	hotMu   sync.Mutex
	hot     []hotCommit
	refresh bool // a commit named a partition this consumer does not know

	// mu guards everything below. It is held for memory work and for
	// Deliverer.Publish (a buffered write that keeps one request's
	// messages and statuses in order), never across a Store call.
	mu         sync.Mutex
	def        StoredConsumer
	conf       ConsumerConfig // def.Config decoded, as stored (echoed in info)
	cfg        ConsumerConfig // conf with defaults
	filterList []string       // cfg's filters; none: every subject
	parts      map[int64]*pstate
	byName     map[string]*pstate // parts by name: the newest id of a name
	order      []*pstate          // parts by id ascending
	rr         int                // where the next fill starts in order
	waiting    []*pullReq
	cseq       uint64 // the last consumer sequence given (dense)
	lastStream uint64
	lastAt     time.Time
	ackPending int
	lastActive time.Time
	bufBytes   int
	stopping   bool      // no more requests: stopped, deleted or dropped
	deleted    bool      // its definition is gone: its acks are not stored
	dirtyParts []*pstate // partitions whose ack state changed since taken by the flusher (pstate.dirty)
	touched    bool      // active since the last TouchConsumers
	soon       bool      // a request waits for its inbox's interest: look again soon
	passes     uint64    // deliver passes so far (pstate.blockedIn)
}

// pstate is the consumer's state on one partition.
type pstate struct {
	id   int64
	name string
	// floor: every offset ≤ floor is acknowledged (durably once flushed).
	floor int64
	// next: the highest offset given its first delivery in this load
	// (delivered, skipped by the filter, or found acknowledged).
	next int64
	// last: the partition's last offset as known; more may exist when
	// maybeMore (another bridge announced a commit, or a read was cut).
	last      int64
	maybeMore bool
	hotAt     time.Time // when Committed last brought a commit of it
	// holdUntil: the Store says some offsets above the floor were
	// delivered before this load (by a bridge that stopped or died) and
	// not acknowledged. Their acknowledgements may still come, as on
	// JetStream, so nothing of the partition is delivered before ack_wait
	// has passed from the load (in partition order, those come first).
	holdUntil time.Time
	// win and head: the slots of the offsets above floor (window.go):
	// acknowledged, delivery counts, pending deliveries, messages in
	// memory (above next, or pending).
	win  []slot
	head int
	// earliest is at or before every pending deadline (zero: none
	// pending), so that the passes look into pending only when one may
	// have come: lowered by every deadline set, raised by dueOffsets'
	// scan. Acknowledgements leave it low, which costs one scan at most.
	earliest time.Time
	dead     []DeadLetter // to write with the next flush
	dirty    bool         // in the consumer's dirtyParts
	// blockedIn: the deliver pass (consumer.passes) in which the
	// partition waits for a read; nothing newer of it goes out then.
	blockedIn uint64
}

// msg is a message ready to publish.
type msg struct {
	offset  int64
	txid    string // for a dead letter
	at      time.Time
	subject string
	header  []byte
	body    []byte
}

func (m *msg) size() int { return len(m.subject) + len(m.header) + len(m.body) + 64 }

func newConsumer(e *JSEngine, k consumerKey, def StoredConsumer, conf ConsumerConfig) *consumer {
	c := &consumer{
		e: e, key: k, id: def.ID, streamFilters: e.cfg.Streams[k.stream],
		kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}), settle: make(chan chan struct{}),
		def: def, conf: conf, cfg: conf.withDefaults(), filterList: conf.filters(),
		parts: map[int64]*pstate{}, byName: map[string]*pstate{},
		lastActive: e.cfg.Clock.Now(),
	}
	return c
}

// update applies a changed definition.
func (c *consumer) update(def StoredConsumer, conf ConsumerConfig) {
	c.mu.Lock()
	c.def, c.conf, c.cfg, c.filterList = def, conf, conf.withDefaults(), conf.filters()
	c.mu.Unlock()
	c.wake()
}

// merge adds partitions the consumer does not know yet; those it knows
// keep their live state (it is newer than the Store's).
func (c *consumer) merge(parts []PartitionState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ps := range parts {
		if p := c.parts[ps.ID]; p != nil {
			if ps.Last > p.last {
				p.last = ps.Last
			}
			continue
		}
		p := &pstate{id: ps.ID, name: ps.Name, floor: ps.Floor, last: ps.Last}
		if ps.First > 0 && ps.First-1 > p.floor {
			p.floor = ps.First - 1 // retention removed what was below
		}
		for _, o := range ps.Acked {
			if o > p.floor {
				p.grow(o).acked = true
			}
		}
		for o, n := range ps.Deliveries {
			if o > p.floor {
				p.grow(o).count = int32(n)
			}
		}
		// Handed out up to Delivered and not acknowledged: once, unless
		// counted more. Their acknowledgements may still come, so the
		// partition holds for ack_wait.
		for o := p.floor + 1; o <= ps.Delivered; o++ {
			s := p.grow(o)
			if s.acked {
				continue
			}
			s.count = max(s.count, 1)
			if p.holdUntil.IsZero() {
				p.holdUntil = c.e.cfg.Clock.Now().Add(c.ackWait(int(s.count)))
			}
		}
		for o, s := range p.slots() {
			if !s.acked && s.count > 0 && o > ps.Delivered && p.holdUntil.IsZero() {
				p.holdUntil = c.e.cfg.Clock.Now().Add(c.ackWait(int(s.count)))
			}
		}
		p.next = p.floor
		c.parts[p.id] = p
		if q := c.byName[p.name]; q == nil || q.id < p.id {
			c.byName[p.name] = p
		}
		c.order = append(c.order, p)
		c.advance(p)
	}
	sort.Slice(c.order, func(i, j int) bool { return c.order[i].id < c.order[j].id })
}

// advance moves p's floor over the acknowledged run above it.
func (c *consumer) advance(p *pstate) {
	n := 0
	for n < p.span() && p.win[p.head+n].acked {
		n++
	}
	moved := n > 0
	c.raiseFloor(p, p.floor+int64(n))
	if p.next < p.floor {
		p.next = p.floor
	}
	if moved {
		c.dirty(p)
	}
}

// dirty notes that p's ack state must be stored; the flusher hears of it.
func (c *consumer) dirty(p *pstate) {
	if p.dirty {
		return
	}
	p.dirty = true
	c.dirtyParts = append(c.dirtyParts, p)
	c.e.flush.mark(c)
}

// ack acknowledges offset o of p (explicit policy).
func (c *consumer) ackOne(p *pstate, o int64) {
	if o <= p.floor {
		return
	}
	s := p.grow(o)
	if s.acked {
		return
	}
	count := s.count
	c.forgetSlot(s)
	s.acked, s.count = true, count
	c.dirty(p)
	c.advance(p)
}

// ackUpTo acknowledges every offset of p up to o (AckAll).
func (c *consumer) ackUpTo(p *pstate, o int64) {
	if o <= p.floor {
		return
	}
	c.raiseFloor(p, o)
	c.dirty(p)
	c.advance(p)
}

// hasNew reports whether p may hold offsets not yet given a first
// delivery.
func (p *pstate) hasNew() bool { return p.next < p.last || p.maybeMore }

// waitingFor is how many messages the parked requests still want.
func (c *consumer) waitingFor() int {
	n := 0
	for _, r := range c.waiting {
		n += r.left
	}
	return n
}

// room is how many more messages may be delivered under max_ack_pending.
func (c *consumer) room() int {
	if c.cfg.AckPolicy == AckNone || c.cfg.MaxAckPending < 0 {
		return 1 << 30
	}
	return max(c.cfg.MaxAckPending-c.ackPending, 0)
}

// wakeRoom is the room under max_ack_pending whose return wakes the
// consumer's goroutine from acknowledgements. Acks free room a message at
// a time, and a pass for each would deliver a few messages a pass, each
// pass its own write to the hub. Waiting for a few dozen (a 32nd of
// max_ack_pending, at most 64) makes each such pass a batch; whatever
// else wakes the goroutine (a pull, a commit, a deadline, a NAK) delivers
// into whatever room there is.
func (c *consumer) wakeRoom() int {
	if c.cfg.AckPolicy == AckNone || c.cfg.MaxAckPending < 0 {
		return 1
	}
	return min(max(c.cfg.MaxAckPending/32, 1), 64)
}

// ackWakes reports whether an acknowledgement of kind, applied where the
// room under max_ack_pending was before, needs a pass of the consumer's
// goroutine: a NAK (its redelivery's deadline), or room grown to wakeRoom
// from below it. Under mu.
func (c *consumer) ackWakes(kind AckKind, before int) bool {
	return kind == AckNak || (before < c.wakeRoom() && c.room() >= c.wakeRoom())
}

// numPending is how many messages lie above what was delivered, over
// every partition the consumer's filters may match.
func (c *consumer) numPending() uint64 {
	var n int64
	for _, p := range c.order {
		if mayHold(c.filterList, c.streamFilters, p.name) {
			n += max(p.last-p.next, 0)
		}
	}
	return uint64(n)
}

// freshInfo is the info after a pass that read the partitions' last
// offsets from the Store, so that NumPending counts every message whose
// PubAck was answered before the request, as on JetStream, even when this
// bridge's memory has not heard of its commit yet (another bridge's, or
// one still on its way here).
func (c *consumer) freshInfo(ctx context.Context) ConsumerInfo {
	c.hotMu.Lock()
	c.refresh = true
	c.hotMu.Unlock()
	ch := make(chan struct{})
	select {
	case c.settle <- ch:
		select {
		case <-ch:
		case <-ctx.Done():
		case <-c.done:
		}
	case <-ctx.Done():
	case <-c.done:
	}
	return c.info()
}

// info is the consumer's info from its live state.
func (c *consumer) info() ConsumerInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.infoLocked()
}

func (c *consumer) infoLocked() ConsumerInfo {
	in := ConsumerInfo{
		Stream: c.key.stream, Name: c.key.name, Created: c.def.CreatedAt, Config: c.conf,
		Delivered:     SequenceInfo{Consumer: c.cseq, Stream: c.lastStream, Last: c.lastAt},
		NumAckPending: c.ackPending, NumWaiting: len(c.waiting), NumPending: c.numPending(),
		TimeStamp: c.e.cfg.Clock.Now(),
	}
	in.AckFloor = floorPair(c.parts)
	for _, p := range c.order {
		for _, s := range p.slots() {
			if s.pending && s.count > 1 {
				in.NumRedelivered++
			}
		}
	}
	return in
}

// floorPair is the lowest floor over partitions with messages.
func floorPair(parts map[int64]*pstate) SequenceInfo {
	var out SequenceInfo
	first := true
	for _, p := range parts {
		if p.last == 0 {
			continue
		}
		if first || uint64(p.floor) < out.Stream {
			out.Stream = uint64(max(p.floor, 0))
			first = false
		}
	}
	return out
}
