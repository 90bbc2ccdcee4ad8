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
	body := sm.Payload
	if c.e.cfg.Plain != nil {
		var err error
		if body, err = c.e.cfg.Plain(c.key.tenant, c.key.stream, p.name, sm.Flags, body); err != nil {
			return nil, fmt.Errorf("cursors: payload of %s offset %d: %w", p.name, sm.Offset, err)
		}
	}
	if sm.Flags&segment.FlagBase64 != 0 {
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
	subject := sm.Subject
	if subject == "" {
		subject = rebuildSubject(c.streamFilters, p.name)
	}
	return &msg{offset: sm.Offset, at: sm.Time, subject: subject, header: sm.Header, body: body}, nil
}

// read runs one ReadAfter for the ranges deliver asked, then takes its
// messages into memory. Offsets a read skipped over were removed by
// retention: they count as acknowledged.
func (c *consumer) read(ranges []ReadRange) error {
	var got []StoredMsg
	err := c.e.call(func(ctx context.Context) error {
		var err error
		got, err = c.e.cfg.Store.ReadAfter(ctx, ranges)
		return err
	})
	if err != nil {
		return fmt.Errorf("cursors: read %d ranges of %s/%s: %w", len(ranges), c.key.stream, c.key.name, err)
	}
	byPart := map[int64][]StoredMsg{}
	for _, sm := range got {
		byPart[sm.PartitionID] = append(byPart[sm.PartitionID], sm)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rg := range ranges {
		p := c.parts[rg.PartitionID]
		if p == nil {
			continue
		}
		var first, high int64
		n := 0
		for i := range byPart[rg.PartitionID] {
			sm := &byPart[rg.PartitionID][i]
			if sm.Offset <= rg.After || (n == rg.Limit) {
				continue
			}
			if n == 0 {
				first = sm.Offset
			}
			n++
			high = max(high, sm.Offset)
			m, err := c.toMsg(p, sm)
			if err != nil {
				c.e.cfg.Logger.Warn().Err(err).Msg("message not deliverable; passed over")
				c.passOver(p, sm.Offset, "undecodable: "+err.Error())
				continue
			}
			c.keep(p, m)
		}
		c.gone(p, rg.After, first, n)
		if rg.After == p.next { // a read of first deliveries
			p.last = max(p.last, high)
			if n < rg.Limit {
				p.maybeMore = false
				if n == 0 {
					p.last = p.next // nothing is there
				}
			}
		}
	}
	return nil
}

// gone handles offsets after `after` a read did not find: retention
// removed them (a read returns offsets in order from the first stored).
func (c *consumer) gone(p *pstate, after, first int64, n int) {
	if n == 0 {
		// Nothing after `after`: a pending offset there is gone.
		for o := range p.pending {
			if o > after {
				c.ackOne(p, o)
			}
		}
		return
	}
	if first <= after+1 {
		return
	}
	if p.floor >= after && len(p.pending) == 0 && len(p.acked) == 0 {
		p.floor, p.next = first-1, max(p.next, first-1)
		c.dirty(p)
		return
	}
	for o := after + 1; o < first; o++ {
		if o > p.next {
			p.next = o
		}
		c.ackOne(p, o)
	}
}

// passOver sends a message nobody can read to the dead letters.
func (c *consumer) passOver(p *pstate, o int64, reason string) {
	if o > p.next {
		p.next = o
	}
	p.dead = append(p.dead, DeadLetter{Offset: o, Reason: reason})
	c.e.stats.deadLetters.Add(1)
	c.ackOne(p, o)
}
