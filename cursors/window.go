package cursors

import (
	"iter"
	"time"
)

// slot is the consumer's state of one offset above a partition's floor.
// A zero slot is an offset nothing is known of: not delivered here or
// before the load, not acknowledged, not in memory.
type slot struct {
	m *msg // the message in memory, to deliver or redeliver (counted in bufBytes)
	// mSize is m's size as counted in bufBytes, kept here so that
	// forgetting m does not read the message itself (an ack comes long
	// after the delivery, when m is out of the processor's cache).
	mSize int32
	// deadline: a pending delivery is redelivered from then on (ack_wait,
	// backoff, NAK delay).
	deadline time.Time
	count    int32 // deliveries so far (0: none known)
	acked    bool  // acknowledged above the floor
	pending  bool  // delivered, not acknowledged (counted in ackPending)
}

// The window holds a partition's slots from floor+1 up: win[head] is the
// slot of offset floor+1, so an offset's slot is found by subtraction and
// the floor moves by dropping slots at the front. Offsets above the
// floor that have state are dense in practice (every offset up to next
// was delivered, passed over or acknowledged), so the window costs about
// what per-offset maps cost, without their hashing.

// slot is o's slot, or nil when o is at or below the floor or beyond the
// window (nothing is known of it).
func (p *pstate) slot(o int64) *slot {
	i := o - p.floor - 1
	if i < 0 || i >= int64(len(p.win)-p.head) {
		return nil
	}
	return &p.win[p.head+int(i)]
}

// grow is o's slot, the window stretched to reach it; o is above the
// floor. The slot is valid until the next grow or raiseFloor.
func (p *pstate) grow(o int64) *slot {
	i := int(o - p.floor - 1)
	if n := len(p.win) - p.head; i >= n {
		if p.head > 0 && p.head >= len(p.win)/2 {
			// More than half the array lies below the floor: move the
			// window down rather than grow the array.
			k := copy(p.win, p.win[p.head:])
			clear(p.win[k:])
			p.win, p.head = p.win[:k], 0
		}
		for range i + 1 - n {
			p.win = append(p.win, slot{})
		}
	}
	return &p.win[p.head+i]
}

// slots yields the window's offsets and their slots, ascending. The
// window must not move (grow, raiseFloor) while it runs.
func (p *pstate) slots() iter.Seq2[int64, *slot] {
	return func(yield func(int64, *slot) bool) {
		for k := p.head; k < len(p.win); k++ {
			if !yield(p.floor+1+int64(k-p.head), &p.win[k]) {
				return
			}
		}
	}
}

// span is how many offsets the window covers above the floor.
func (p *pstate) span() int { return len(p.win) - p.head }

// setDeadline sets a pending delivery's deadline and keeps earliest at or
// before it.
func (p *pstate) setDeadline(s *slot, t time.Time) {
	s.deadline = t
	if p.earliest.IsZero() || t.Before(p.earliest) {
		p.earliest = t
	}
}

// raiseFloor moves p's floor up to f: every offset up to it counts as
// acknowledged, and its slot is forgotten with the memory and the
// pending delivery it held.
func (c *consumer) raiseFloor(p *pstate, f int64) {
	if f <= p.floor {
		return
	}
	n := int(min(f-p.floor, int64(p.span())))
	for k := p.head; k < p.head+n; k++ {
		c.forgetSlot(&p.win[k])
	}
	p.head += n
	p.floor = f
	if p.head == len(p.win) {
		p.win, p.head = p.win[:0], 0
	}
}

// forgetSlot gives back what s held: its message's memory, its pending
// delivery.
func (c *consumer) forgetSlot(s *slot) {
	c.dropMsg(s)
	if s.pending {
		c.ackPending--
	}
	*s = slot{}
}

// holdMsg keeps m, of the given size, in s, counted in bufBytes.
func (c *consumer) holdMsg(s *slot, m *msg, size int) {
	s.m, s.mSize = m, int32(size)
	c.bufBytes += size
}

// dropMsg forgets the message s holds in memory, if any.
func (c *consumer) dropMsg(s *slot) {
	if s.m != nil {
		c.bufBytes -= int(s.mSize)
		s.m, s.mSize = nil, 0
	}
}

// maxAhead bounds how far above the floor a commit handed over is kept in
// memory: a consumer far behind reads it when its turn comes, and its
// window does not stretch over the backlog in between.
const maxAhead = 1 << 16
