package push

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/smallmap"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/queues"
	"github.com/queenbridge/queenbridge/segment"
)

// distinctPartitions counts the request's distinct (queue, partition)
// pairs, up to one past max (when there cannot be more than max, it does
// not count).
func distinctPartitions(items []jsonapi.Item, max int) int {
	if len(items) <= max {
		return len(items)
	}
	seen := make(map[[2]string]struct{}, max+1)
	for i := range items {
		seen[[2]string{items[i].Queue, items[i].Partition}] = struct{}{}
	}
	return len(seen)
}

// prepare mints ids, resolves transactionIds, applies layer-1 dedup and
// encryption, and groups the leaders by partition.
func (c *pushCall) prepare(ctx context.Context) []*group {
	type l1key struct{ queue, partition, txid string }
	var seen smallmap.Map[l1key, int32]
	var encrypted smallmap.Map[string, error] // queue -> nil (encrypt), queues.ErrPlain (plaintext) or the reason to fail
	var byPart smallmap.Map[[2]string, *group]
	groups := make([]*group, 0, 1)
	for i := range c.items {
		it := &c.items[i]
		id := uuid.Must(uuid.NewV7())
		c.st[i].id = id
		c.st[i].txid = it.TransactionID
		if c.st[i].txid == "" {
			c.st[i].txid = id.String()
		}
		k := l1key{it.Queue, it.Partition, c.st[i].txid}
		if lead, ok := seen.Get(k); ok {
			c.st[i].leader = lead // a follower: no frame, copies its leader's final verdict
			continue
		}
		seen.Put(k, int32(i))
		c.st[i].leader = int32(i)

		enc, ok := encrypted.Get(it.Queue)
		if !ok {
			enc = c.p.cfg.Queues.EncryptionFor(ctx, c.tenant, it.Queue)
			encrypted.Put(it.Queue, enc)
		}
		f := segment.Frame{ID: id, TransactionID: c.st[i].txid, TraceID: it.TraceID, Payload: it.Payload, Subject: it.Subject, Header: it.Header}
		var encoded uint8 // describes the plaintext, so it survives sealing
		if it.Encoded {
			encoded = segment.FlagBase64
		}
		switch {
		case enc == nil:
			f.Payload, f.Flags = c.p.cfg.Queues.Seal(c.tenant, it.Queue, it.Partition, it.Payload)
		case !errors.Is(enc, queues.ErrPlain):
			c.st[i].result = jsonapi.Result{Status: jsonapi.StatusFailed, Error: enc.Error()}
			continue
		}
		f.Flags |= encoded
		pk := [2]string{it.Queue, it.Partition}
		g, _ := byPart.Get(pk)
		if g == nil {
			g = &group{queue: it.Queue, partition: it.Partition}
			byPart.Put(pk, g)
			groups = append(groups, g)
		}
		if it.TransactionID == "" && g.minted == nil {
			g.minted = make([]bool, len(g.frames), len(g.frames)+1)
		}
		if g.minted != nil {
			g.minted = append(g.minted, it.TransactionID == "")
		}
		if it.Mark != nil && g.marks == nil {
			g.marks = make([]segment.Mark, len(g.frames), len(g.frames)+1)
		}
		if g.marks != nil {
			var m segment.Mark
			if it.Mark != nil {
				m = segment.Mark(*it.Mark)
			}
			g.marks = append(g.marks, m)
		}
		g.frames = append(g.frames, f)
		g.items = append(g.items, int32(i))
	}
	for _, g := range groups { // the frames slices are final now
		for j, idx := range g.items {
			c.st[idx].frame = &g.frames[j]
		}
	}
	return groups
}
