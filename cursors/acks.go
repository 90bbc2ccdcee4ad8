package cursors

import (
	"time"

	"github.com/queenbridge/queenbridge/internal/every"
	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// Ack applies an acknowledgement of a delivered message. With a reply
// (a double ack, or any ack sent as a request) an empty message answers
// once the ack state that includes it is committed. An ack of an offset
// the partition never held is not answered (as nats-server does not
// answer an ack of a sequence it never delivered), so a double ack of it
// times out. An ack for a consumer living on another bridge goes there
// through the Forwarder.
func (e *JSEngine) Ack(tenant tenancy.TenantID, ref AckRef, kind AckKind, delay time.Duration, reason, reply string) {
	err := e.ack(tenant, ref, kind, delay, reason, reply)
	if id, ok := IsNotOwner(err); ok && e.cfg.Forwarder != nil {
		err = e.cfg.Forwarder.ForwardAck(id, tenant, ref, kind, delay, reason, reply)
	}
	if err != nil && ackLog.Allow() {
		e.cfg.Logger.Warn().Err(err).Str("consumer", ref.Consumer).Msg("acknowledgement not applied")
	}
}

// AckForwarded takes an acknowledgement another bridge forwarded here,
// the consumer's owner. It never forwards again: ErrNotOwner when
// ownership moved on meanwhile (the message comes back after its ack
// wait, from the new owner).
func (e *JSEngine) AckForwarded(tenant tenancy.TenantID, ref AckRef, kind AckKind, delay time.Duration, reason, reply string) error {
	return e.ack(tenant, ref, kind, delay, reason, reply)
}

func (e *JSEngine) ack(tenant tenancy.TenantID, ref AckRef, kind AckKind, delay time.Duration, reason, reply string) error {
	// The live consumer without with's closure: an ack a message costs no
	// allocation for it.
	c, err := e.liveOne(tenant, ref.Stream, ref.Consumer)
	if c != nil || err != nil {
		if c != nil {
			c.ack(ref, kind, delay, reason, reply)
		}
		return err
	}
	return e.with(tenant, ref.Stream, ref.Consumer, func(c *consumer, err error, _ bool) {
		if err == nil {
			c.ack(ref, kind, delay, reason, reply)
		}
	})
}

// ack applies an acknowledgement to the live consumer.
func (c *consumer) ack(ref AckRef, kind AckKind, delay time.Duration, reason, reply string) {
	e := c.e
	now := e.cfg.Clock.Now()
	c.mu.Lock()
	if c.deleted {
		c.mu.Unlock()
		return
	}
	c.lastActive, c.touched = now, true
	// A pass is needed only when this can let more out: room under
	// max_ack_pending where there was too little (wakeRoom), or a NAK's
	// redelivery (its deadline may come before the loop's timer).
	// Deliveries go on while there is room, so an ack that leaves room as
	// it was changes nothing for them; a pass per ack would cost the
	// consumer's goroutine a walk of its partitions per message.
	before := c.room()
	p := c.parts[ref.PartitionID]
	// An offset above next may have been delivered before this bridge
	// loaded the consumer (a restart, an owner change): its ack counts.
	if p == nil || ref.Offset <= 0 || ref.Offset > max(p.last, p.next) {
		c.mu.Unlock()
		return
	}
	d := p.slot(ref.Offset)
	// A NAK or +WPI of an earlier delivery than the one pending is stale.
	current := d != nil && d.pending && (ref.Delivered == 0 || ref.Delivered >= uint64(d.count))
	switch kind {
	case AckAck:
		e.stats.acks.Add(1)
		switch c.cfg.AckPolicy {
		case AckExplicit:
			c.ackOne(p, ref.Offset)
		case AckAll:
			c.ackUpTo(p, ref.Offset)
		}
	case AckNak:
		e.stats.naks.Add(1)
		if current {
			if delay <= 0 && len(c.cfg.BackOff) > 0 {
				delay = c.ackWait(int(d.count))
			}
			p.setDeadline(d, now.Add(max(delay, 0)))
		}
	case AckProgress:
		if current {
			p.setDeadline(d, now.Add(c.ackWait(int(d.count))))
		}
	case AckTerm:
		e.stats.terms.Add(1)
		if s := p.slot(ref.Offset); ref.Offset > p.floor && (s == nil || !s.acked) {
			if reason == "" {
				reason = "terminated"
			}
			c.deadLetter(p, ref.Offset, reason)
			if c.cfg.AckPolicy == AckAll {
				c.ackUpTo(p, ref.Offset)
			}
		}
	}
	wake := c.ackWakes(kind, before)
	c.mu.Unlock()
	if reply != "" {
		e.flush.reply(c.key.tenant, reply)
	}
	if wake {
		c.wake()
	}
}

// ackLog limits the warnings of acks not applied.
var ackLog = every.New(10 * time.Second)
