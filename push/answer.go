package push

import (
	"context"
	"slices"
	"time"

	"github.com/queenbridge/queenbridge/internal/smallmap"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/readside"
)

// finish answers once every group settled. Items whose write failed are
// spooled first; that fsync must not hold up the fusion goroutine that
// settled the last group, so it runs on a goroutine of its own.
func (c *pushCall) finish() {
	for i := range c.st {
		if c.st[i].result.Status == statusError {
			go func() {
				c.spoolErrors(context.Background())
				c.answerNow()
			}()
			return
		}
	}
	c.answerNow()
}

// answerNow copies each leader's final verdict to its followers, renders,
// and answers.
func (c *pushCall) answerNow() {
	status := jsonapi.StatusCreated
	// Counted per status, then added once each: a label look-up per item
	// costs more than the count.
	var counts smallmap.Map[string, int]
	for i := range c.st {
		if lead := c.st[i].leader; lead != int32(i) {
			c.st[i].result = followerResult(c.st[lead].result)
		}
		st := c.st[i].result.Status
		if n, ok := counts.Get(st); ok {
			counts.Set(st, n+1)
		} else {
			counts.Put(st, 1)
		}
		if st == jsonapi.StatusFailed {
			status = jsonapi.StatusInternalServerError
		}
	}
	counts.Each(c.p.cfg.Observer.Items)
	c.p.cfg.Observer.Latency(c.transport, time.Since(c.start))
	switch {
	case c.out.Item != nil:
		c.out.Item(status, c.st[0].result)
	case c.out.Items != nil:
		rs := make([]jsonapi.Result, len(c.st))
		for i := range c.st {
			rs[i] = c.st[i].result
		}
		c.out.Items(status, rs)
	default:
		c.out.Body(status, c.render())
	}
	c.p.cfg.Reads.AnnouncePushed(c.written())
}

// written lists the partitions this request added messages to.
func (c *pushCall) written() []readside.Key {
	var keys []readside.Key
	var seen map[readside.Key]bool // only for requests too big to scan keys
	for i := range c.st {
		if c.st[i].result.Status != jsonapi.StatusQueued {
			continue
		}
		k := readside.Key{Tenant: c.tenant, Queue: c.items[i].Queue, Partition: c.items[i].Partition}
		if seen == nil && len(keys) < 8 {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
			continue
		}
		if seen == nil {
			seen = make(map[readside.Key]bool, len(c.st))
			for _, k := range keys {
				seen[k] = true
			}
		}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// render writes the response array: one small object per item.
func (c *pushCall) render() []byte {
	out := make([]byte, 0, 64+len(c.items)*400) // one answer, both spellings, is about 350 bytes
	out = append(out, '[')
	for i := range c.items {
		if i > 0 {
			out = append(out, ',')
		}
		out = jsonapi.AppendResult(out, i, &c.st[i].result, c.st[i].txid, c.items[i].TraceID, c.items[i].Queue, c.items[i].Partition)
	}
	return append(out, ']')
}

// followerResult is what a repeat inside one request is answered: a
// duplicate of whatever its leader finally became.
func followerResult(lead jsonapi.Result) jsonapi.Result {
	switch lead.Status {
	case jsonapi.StatusQueued, jsonapi.StatusDuplicate:
		return jsonapi.Result{Status: jsonapi.StatusDuplicate, MessageID: lead.MessageID, HasID: true, Offset: lead.Offset}
	}
	return lead // buffered (the leader's id) or failed
}
