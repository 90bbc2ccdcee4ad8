package cursors

import (
	"strconv"
	"strings"
	"time"
)

// candidate is the next message to give a request.
type candidate struct {
	p     *pstate
	m     *msg
	again bool // a redelivery
}

// fillState is one pass of deliver: the due redeliveries per partition,
// the reads it needs, and the pass's number, by which the partitions that
// wait for one are marked (nothing newer of a partition goes out before
// what it waits for).
type fillState struct {
	now     time.Time
	due     map[int64][]int64
	ranges  []ReadRange
	pass    uint64 // the consumer's passes: a partition whose blockedIn is pass waits for a read
	want    int
	pending uint64 // num pending, for the ack subjects
}

// deliver hands the parked requests what memory holds, in order:
// per partition, due redeliveries first, then the offsets after next;
// across partitions, one message each in turn, so a batch may span
// partitions. It returns the reads that would let it deliver more. Under mu.
func (c *consumer) deliver(now time.Time) []ReadRange {
	if len(c.waiting) == 0 {
		return nil
	}
	// The pass's deliveries leave in one write when it ends.
	c.e.cfg.Deliverer.Hold(c.key.tenant)
	defer c.e.cfg.Deliverer.Release(c.key.tenant)
	c.passes++
	fs := &fillState{now: now, pass: c.passes, pending: c.numPending()}
	fs.want = min(c.waitingFor(), c.room(), c.e.cfg.ReadMax)
	fs.due = c.dueOffsets(now)
	for i := 0; i < len(c.waiting) && c.room() > 0; {
		r := c.waiting[i]
		if !r.checked {
			switch c.interest(r, now) {
			case interestGone:
				c.unpark(i)
				c.e.stats.interestLost.Add(1)
				continue
			case interestNotYet:
				c.soon = true
				r.unheard = true
				i++
				continue
			}
			r.checked, r.unheard = true, false
		}
		cand, ok := c.pick(fs)
		if !ok {
			break
		}
		size := cand.m.size()
		if r.maxBytes && size > r.bytesLeft {
			c.status(r, 409, descMaxBytes, true)
			c.unpark(i)
			continue
		}
		c.send(r, cand, fs)
		if r.left == 0 {
			if r.maxBytes && r.bytesLeft > 0 {
				c.status(r, 409, descBatchCompleted, true)
			}
			c.unpark(i)
		}
	}
	for _, r := range c.waiting {
		r.checked = false
	}
	return fs.ranges
}

// The interest in a request's inbox, as the hub told the Deliverer.
const (
	interestYes = iota
	interestNotYet
	interestGone
)

// interestGrace is how long a request's inbox may show no interest before
// the request is dropped: the hub's LS+ for a new inbox travels on the
// leaf connection, the request on another, and may come second. Until
// then the request is passed over (and looked at again soon), so no
// message goes where the hub would drop it.
const interestGrace = 2 * time.Second

func (c *consumer) interest(r *pullReq, now time.Time) int {
	if c.e.cfg.Deliverer.Interested(c.key.tenant, r.inbox) {
		return interestYes
	}
	if now.Sub(r.parked) < interestGrace {
		return interestNotYet
	}
	return interestGone
}

// dueOffsets are the pending offsets whose deadline has come, ascending
// per partition; those that reached max_deliver go to the dead letters
// instead.
func (c *consumer) dueOffsets(now time.Time) map[int64][]int64 {
	var due map[int64][]int64 // made when something is due: most passes have nothing
	var dead []int64
	for _, p := range c.order {
		if p.earliest.IsZero() || now.Before(p.earliest) {
			continue
		}
		var list []int64
		var earliest time.Time
		dead = dead[:0]
		for o, s := range p.slots() {
			if !s.pending {
				continue
			}
			if earliest.IsZero() || s.deadline.Before(earliest) {
				earliest = s.deadline
			}
			if s.deadline.After(now) {
				continue
			}
			if c.cfg.MaxDeliver > 0 && int(s.count) >= c.cfg.MaxDeliver {
				dead = append(dead, o)
				continue
			}
			list = append(list, o)
		}
		// After the scan: a dead letter is acknowledged, which may move
		// the floor and so the window under it.
		for _, o := range dead {
			c.deadLetter(p, o, "max_deliver")
		}
		// The earliest deadline of what is pending: at or before now while
		// something due waits for a request to take it.
		p.earliest = earliest
		if len(list) > 0 {
			if due == nil {
				due = map[int64][]int64{}
			}
			due[p.id] = list // ascending, as the window is
		}
	}
	return due
}

// pick finds the next message, starting at the partition after the last
// one served. A message memory does not hold becomes a read, and its
// partition waits for it.
func (c *consumer) pick(fs *fillState) (candidate, bool) {
	n := len(c.order)
	for i := 0; i < n; i++ {
		idx := (c.rr + i) % n
		p := c.order[idx]
		if p.blockedIn == fs.pass || fs.now.Before(p.holdUntil) {
			continue
		}
		if list := fs.due[p.id]; len(list) > 0 {
			o := list[0]
			s := p.slot(o)
			if s == nil || !s.pending {
				fs.due[p.id] = list[1:] // acknowledged meanwhile
				i--
				continue
			}
			if m := s.m; m != nil {
				fs.due[p.id] = list[1:]
				c.rr = idx + 1
				return candidate{p: p, m: m, again: true}, true
			}
			run := 1
			for run < len(list) && list[run] == o+int64(run) {
				run++
			}
			fs.ranges = append(fs.ranges, ReadRange{PartitionID: p.id, After: o - 1, Limit: run})
			p.blockedIn = fs.pass
			continue
		}
		for p.hasNew() {
			o := p.next + 1
			s := p.slot(o)
			if o <= p.floor || s != nil && s.acked {
				p.next = o
				continue
			}
			var m *msg
			if s != nil {
				m = s.m
			}
			if m == nil {
				fs.ranges = append(fs.ranges, ReadRange{PartitionID: p.id, After: p.next, Limit: c.readLimit(p, fs.want)})
				p.blockedIn = fs.pass
				break
			}
			if !matchesAny(c.filterList, m.subject) {
				// Not this consumer's: acknowledged as passed over, so the
				// floor moves on.
				p.next = o
				c.dropBuf(p, o)
				c.ackOne(p, o)
				continue
			}
			c.rr = idx + 1
			return candidate{p: p, m: m}, true
		}
	}
	return candidate{}, false
}

// readLimit is how many messages a read of p's first deliveries asks
// for: the requests' want, shared when many partitions may need reads
// (what a read brings beyond this pass is kept for the next), and no more
// than p is known to hold when nothing else was announced.
func (c *consumer) readLimit(p *pstate, want int) int {
	limit := max(want, 1)
	if n := len(c.order); n > 1 {
		limit = min(limit, max(want/n, minReadLimit))
	}
	if !p.maybeMore && p.last > p.next {
		limit = min(limit, int(min(p.last-p.next, 1<<20)))
	}
	return limit
}

// minReadLimit: a read of a partition asks for at least this many.
const minReadLimit = 128

// send publishes one message to r and records the delivery. Under mu.
func (c *consumer) send(r *pullReq, cand candidate, fs *fillState) {
	p, m := cand.p, cand.m
	o := m.offset
	count := int(p.slot(o).count) + 1 // a candidate is held in memory, so in the window
	c.cseq++
	if !cand.again && fs.pending > 0 {
		fs.pending--
	}
	reply := c.ackReply(p.id, count, o, m.at, fs.pending, m.subject)
	header, body := m.header, m.body
	if c.cfg.HeadersOnly {
		header, body = headersOnly(m.header, len(m.body)), nil
	}
	c.e.publish(c.key.tenant, r.inbox, reply, header, body)
	size := m.size()
	r.left--
	r.delivered++
	if r.maxBytes {
		r.bytesLeft -= size
	}
	r.lastSent = fs.now
	c.lastStream, c.lastAt = uint64(o), fs.now
	c.e.stats.deliveries.Add(1)
	if cand.again {
		c.e.stats.redeliveries.Add(1)
	} else {
		p.next = o
	}
	if c.cfg.AckPolicy == AckNone {
		c.dropBuf(p, o)
		c.ackOne(p, o)
		return
	}
	s := p.slot(o)
	if !s.pending {
		s.pending = true
		c.ackPending++
	}
	s.count = int32(count)
	p.setDeadline(s, fs.now.Add(c.ackWait(count)))
	// What was handed out is stored (the partition's delivered mark, and
	// the counts of redeliveries), so that max_deliver and NumDelivered
	// outlive the bridge, and a bridge that loads the consumer after this
	// one died knows what was handed out (holdUntil).
	c.dirty(p)
}

// ackWait is the deadline of a delivery by its count: the backoff step,
// else ack_wait.
func (c *consumer) ackWait(count int) time.Duration {
	if b := c.cfg.BackOff; len(b) > 0 {
		return b[min(int(count)-1, len(b)-1)]
	}
	return c.cfg.AckWait
}

// ackReply is a delivery's reply: its ack subject,
// $JS.ACK._.<partition id>.<stream>.<consumer>.<delivered>.<offset>.<consumer seq>.<ts ns>.<pending>.<epoch>,
// then @<shown> when the message has a subject to be shown on. One
// allocation: it is built for every delivery.
func (c *consumer) ackReply(pid int64, count int, offset int64, at time.Time, pending uint64, shown string) string {
	var sb strings.Builder // String hands over its bytes without a copy
	sb.Grow(96 + len(c.key.stream) + len(c.key.name) + len(shown))
	var nb [20]byte
	num := func(n int64) {
		sb.Write(strconv.AppendInt(nb[:0], n, 10))
		sb.WriteByte('.')
	}
	unum := func(n uint64) {
		sb.Write(strconv.AppendUint(nb[:0], n, 10))
		sb.WriteByte('.')
	}
	sb.WriteString("$JS.ACK._.")
	num(pid)
	sb.WriteString(c.key.stream)
	sb.WriteByte('.')
	sb.WriteString(c.key.name)
	sb.WriteByte('.')
	num(int64(count))
	num(offset)
	unum(c.cseq)
	num(at.UnixNano())
	unum(pending)
	sb.WriteString(c.e.epoch)
	if shown != "" {
		sb.WriteByte('@')
		sb.WriteString(shown)
	}
	return sb.String()
}

// headersOnly is the header block of a headers_only delivery: the stored
// headers plus Nats-Msg-Size.
func headersOnly(stored []byte, size int) []byte {
	h := make([]byte, 0, len(stored)+48)
	if len(stored) >= 4 {
		h = append(h, stored[:len(stored)-2]...) // drop the closing blank line
	} else {
		h = append(h, "NATS/1.0\r\n"...)
	}
	h = append(h, "Nats-Msg-Size: "...)
	h = strconv.AppendInt(h, int64(size), 10)
	return append(h, "\r\n\r\n"...)
}

// dropBuf forgets a message held in memory.
func (c *consumer) dropBuf(p *pstate, o int64) {
	if s := p.slot(o); s != nil {
		c.dropMsg(s)
	}
}

// keep holds m in memory when it is still to be delivered (above next,
// or pending). A commit handed over is kept only while the bound allows;
// what a read brought always is (a read asks for what the requests
// want, so it is bounded, and dropping it would only read it again).
func (c *consumer) keep(p *pstate, m *msg, read bool) {
	o := m.offset
	if o <= p.floor {
		return
	}
	s := p.slot(o)
	if s != nil && (s.m != nil || s.acked) {
		return
	}
	if o <= p.next && (s == nil || !s.pending) {
		return
	}
	size := m.size()
	if !read && (c.bufBytes+size > c.e.cfg.BufferBytes || o-p.floor > maxAhead) {
		return // read again when its turn comes
	}
	c.holdMsg(p.grow(o), m, size)
}
