package cursors

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/queenbridge/queenbridge/segment"
)

// toMsg makes a stored message publishable: decrypted, and a body the
// intake kept as base64 (not JSON) decoded back to what was published.
func (c *consumer) toMsg(p *pstate, sm *StoredMsg) (*msg, error) {
	f := &sm.Frame
	body := f.Payload
	if c.e.cfg.Plain != nil {
		var err error
		if body, err = c.e.cfg.Plain(c.key.tenant, c.key.stream, p.name, f.Flags, body); err != nil {
			return nil, fmt.Errorf("cursors: payload of %s offset %d: %w", p.name, sm.Offset, err)
		}
	}
	if f.Flags&segment.FlagBase64 != 0 {
		s := body
		if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
			s = s[1 : len(s)-1]
		}
		dec := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
		n, err := base64.StdEncoding.Decode(dec, s)
		if err != nil {
			return nil, fmt.Errorf("cursors: base64 payload of %s offset %d: %w", p.name, sm.Offset, err)
		}
		body = dec[:n]
	}
	subject, header := frameSubject(f)
	if subject == "" {
		subject = rebuildSubject(c.streamFilters, p.name)
	}
	return &msg{offset: sm.Offset, txid: f.TransactionID, at: sm.CreatedAt, subject: subject, header: header, body: body}, nil
}

// read runs one ReadAfter for the ranges deliver asked, then takes its
// messages into memory. Offsets a run passed over are gone (tombstoned,
// or removed by retention): they count as acknowledged.
func (c *consumer) read(ranges []ReadRange) error {
	runs, fromTail, err := c.readRuns(ranges)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, rg := range ranges {
		run := &runs[i]
		p := c.parts[rg.PartitionID]
		if p == nil {
			continue
		}
		firstDeliveries := rg.After == p.next
		next := rg.After
		for k := range run.Messages {
			sm := &run.Messages[k]
			next = max(next, sm.Offset)
			m, err := c.toMsg(p, sm)
			if err != nil {
				c.e.cfg.Logger.Warn().Err(err).Msg("message not deliverable: to the dead letters")
				c.deadLetterTx(p, sm.Offset, sm.Frame.TransactionID, "undeliverable: "+err.Error())
				continue
			}
			c.keep(p, m, true)
		}
		next = max(next, run.Next)
		c.gone(p, rg.After, next, run.Messages)
		if firstDeliveries {
			// A run from memory ends where memory does: PostgreSQL may
			// hold more after it.
			p.maybeMore = len(run.Messages) >= rg.Limit || run.Full || fromTail[i]
			if next == rg.After && !p.maybeMore {
				p.last = p.next // nothing after it now; a later commit raises it again
			}
			p.last = max(p.last, next)
		}
	}
	return nil
}

// readRuns answers the ranges: from the hot tail those it holds, the rest
// with one ReadAfter; fromTail[i] tells which.
func (c *consumer) readRuns(ranges []ReadRange) (runs []ReadRun, fromTail []bool, err error) {
	runs, fromTail = make([]ReadRun, len(ranges)), make([]bool, len(ranges))
	var rest []ReadRange
	var at []int
	for i, rg := range ranges {
		if run, ok := c.e.cfg.Tail.ReadAfter(rg); ok {
			runs[i], fromTail[i] = run, true
			continue
		}
		rest, at = append(rest, rg), append(at, i)
	}
	if len(rest) == 0 {
		return runs, fromTail, nil
	}
	var read []ReadRun
	err = c.e.call(func(ctx context.Context) error {
		var err error
		read, err = c.e.cfg.Store.ReadAfter(ctx, rest)
		return err
	})
	if err == nil && len(read) != len(rest) {
		err = fmt.Errorf("%d runs answer %d ranges", len(read), len(rest))
	}
	if err != nil {
		return nil, nil, fmt.Errorf("cursors: read %d ranges of %s/%s: %w", len(rest), c.key.stream, c.key.name, err)
	}
	for k, i := range at {
		runs[i] = read[k]
	}
	return runs, fromTail, nil
}

// gone acknowledges the offsets in (after, next] a run did not hold. A
// gap that starts at the floor moves the floor at once (retention may
// have removed many).
func (c *consumer) gone(p *pstate, after, next int64, msgs []StoredMsg) {
	first := next + 1
	if len(msgs) > 0 {
		first = msgs[0].Offset
	}
	if p.floor >= after && first-1 > p.floor {
		c.raiseFloor(p, first-1)
		p.next = max(p.next, p.floor)
		c.dirty(p)
		c.advance(p)
	}
	k := 0
	for o := max(after, p.floor) + 1; o <= next; o++ {
		for k < len(msgs) && msgs[k].Offset < o {
			k++
		}
		if k < len(msgs) && msgs[k].Offset == o {
			continue
		}
		c.ackOne(p, o)
	}
}

// deadLetter sends offset o to the dead letters (max_deliver, +TERM) and
// acknowledges it.
func (c *consumer) deadLetter(p *pstate, o int64, reason string) {
	txid := ""
	if s := p.slot(o); s != nil && s.m != nil {
		txid = s.m.txid
	}
	c.deadLetterTx(p, o, txid, reason)
}

func (c *consumer) deadLetterTx(p *pstate, o int64, txid, reason string) {
	if o <= p.floor {
		return
	}
	n := 0
	if s := p.slot(o); s != nil {
		if s.acked {
			return
		}
		n = int(s.count)
	}
	p.dead = append(p.dead, DeadLetter{Offset: o, TransactionID: txid, Error: reason, Deliveries: n})
	c.e.stats.deadLetters.Add(1)
	c.ackOne(p, o)
}
