package cursors

import (
	"testing"
	"time"
)

// An offset's slot is found above the floor and within the window only;
// raising the floor gives back the memory and the pending deliveries of
// the slots it passes and keeps those above it.
func TestWindowSlotsFollowTheFloor(t *testing.T) {
	c := &consumer{}
	p := &pstate{floor: 10}
	if p.slot(11) != nil || p.slot(10) != nil {
		t.Fatal("an empty window has slots")
	}
	p.grow(13).acked = true
	if p.span() != 3 || p.slot(10) != nil || p.slot(14) != nil {
		t.Fatalf("window of span %d after growing to 13 (floor 10)", p.span())
	}
	if s := p.slot(12); s == nil || s.acked || s.m != nil {
		t.Fatalf("offset 12's slot %+v, want zero", s)
	}
	m := &msg{offset: 11, body: make([]byte, 100)}
	s := p.slot(11)
	c.holdMsg(s, m, m.size())
	s.pending, s.count = true, 1
	c.ackPending = 1

	c.raiseFloor(p, 12)
	if c.bufBytes != 0 || c.ackPending != 0 {
		t.Fatalf("bufBytes %d, ackPending %d after the floor passed offset 11", c.bufBytes, c.ackPending)
	}
	if p.floor != 12 || p.span() != 1 || !p.slot(13).acked {
		t.Fatalf("floor %d, span %d; offset 13 must stay acknowledged", p.floor, p.span())
	}
	c.raiseFloor(p, 1000) // beyond the window: the floor moves all the same
	if p.floor != 1000 || p.span() != 0 || p.slot(1001) != nil {
		t.Fatalf("floor %d, span %d after raising past the window", p.floor, p.span())
	}
}

// A window that slides (delivered at the top, acknowledged at the
// bottom) keeps an array about its span, not one that grows with every
// offset it passed.
func TestWindowSlidesInBoundedMemory(t *testing.T) {
	c := &consumer{}
	p := &pstate{}
	const span = 100
	for o := int64(1); o <= 100_000; o++ {
		p.grow(o)
		if o > span {
			c.raiseFloor(p, o-span)
		}
		if p.span() > span {
			t.Fatalf("span %d at offset %d", p.span(), o)
		}
	}
	if cap(p.win) > 4*span {
		t.Fatalf("the window's array holds %d slots for a span of %d", cap(p.win), span)
	}
}

// An offset acknowledged before its first delivery (an ack of a delivery
// made before this bridge loaded the consumer) is passed over when a read
// brings it, and its message is not held: once every other offset is
// acknowledged, the consumer holds no memory and nothing pending.
func TestAnAckedOffsetIsNotHeldInMemory(t *testing.T) {
	h := newHarness(t, nil)
	h.add(1, 5)
	h.create(ConsumerConfig{Durable: "C", AckWait: time.Hour})
	h.e.Ack(tenant, AckRef{PartitionID: 1, Stream: "ORDERS", Consumer: "C", Offset: 3}, AckAck, 0, "", "")
	h.pull("C", PullRequest{Batch: 10, NoWait: true}, "inbox.w")
	h.waitStatus("inbox.w", "404 No Messages")
	got := h.out.msgsTo("inbox.w")
	if len(got) != 4 {
		t.Fatalf("%d deliveries, want 4 (offset 3 was acknowledged)", len(got))
	}
	for _, p := range got {
		if r := ackRef(t, p); r.Offset == 3 {
			t.Fatal("the acknowledged offset 3 was delivered")
		}
		h.ack(p, AckAck, 0, "")
	}
	h.settle("C")
	h.e.mu.Lock()
	c := h.e.live[consumerKey{tenant, "ORDERS", "C"}]
	h.e.mu.Unlock()
	h.out.mu.Lock()
	holds, made := h.out.holds, h.out.holdsMade
	h.out.mu.Unlock()
	if holds != 0 || made == 0 {
		t.Fatalf("%d holds of the deliverer left open of %d made; every delivering pass holds and releases", holds, made)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.parts[1]
	if c.bufBytes != 0 || c.ackPending != 0 || p.floor != 5 || p.span() != 0 {
		t.Fatalf("bufBytes %d, ackPending %d, floor %d, span %d; want 0, 0, 5, 0", c.bufBytes, c.ackPending, p.floor, p.span())
	}
}
