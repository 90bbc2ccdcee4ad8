package push

import (
	"context"

	"github.com/queenbridge/queenbridge/internal/smallmap"
	"github.com/queenbridge/queenbridge/ownership"
)

// forwardOthers sends the groups another bridge owns to their owners (the
// router gathers them with concurrent requests' into one message per
// owner) and returns the groups this bridge writes. With every group its
// own (always, for a bridge alone) it allocates nothing. A group of the
// publish relay's (it carries marks, which the forward does not) is
// written here, as another writer of the partition: its marks must be
// stored by the transaction that stores it.
func (c *pushCall) forwardOthers(ctx context.Context, groups []*group) []*group {
	var byOwner smallmap.Map[string, []*group]
	var local []*group // nil until a group goes elsewhere
	for i, g := range groups {
		owner := ""
		if g.marks == nil {
			owner = c.p.cfg.Router.Owner(c.tenant, g.queue, g.partition)
		}
		if owner == "" {
			if local != nil {
				local = append(local, g)
			}
			continue
		}
		if local == nil {
			local = append(make([]*group, 0, len(groups)), groups[:i]...)
		}
		if gs, ok := byOwner.Get(owner); ok {
			byOwner.Set(owner, append(gs, g))
		} else {
			byOwner.Put(owner, []*group{g})
		}
	}
	if local == nil {
		return groups
	}
	byOwner.Each(func(owner string, gs []*group) { c.forward(ctx, owner, gs) })
	return local
}

// forward sends gs to their owner; the router's goroutine that hears the
// answer settles them with its verdicts. Those it did not answer are
// written here, probe and all: the owner may have written them anyway
// (docs/ownership.md).
func (c *pushCall) forward(ctx context.Context, owner string, gs []*group) {
	wire := make([]ownership.Group, len(gs))
	for i, g := range gs {
		wire[i] = ownership.Group{Queue: g.queue, Partition: g.partition, Frames: g.frames}
	}
	c.p.cfg.Router.ForwardAsync(owner, c.tenant, wire, func(answers []ownership.Answer, err error) {
		var unanswered []*group
		for i, g := range gs {
			if err == nil && !answers[i].Refused {
				c.settle(g, answers[i].Verdicts)
				continue
			}
			unanswered = append(unanswered, g)
		}
		if len(unanswered) == 0 {
			return
		}
		// Submitting may wait for room in fusion; the router's goroutine
		// answers the other requests of the message, so a goroutine of
		// this call, which ends once they are submitted, does it.
		go func() {
			for _, g := range unanswered {
				g.minted = nil
				c.submit(ctx, g, nil)
			}
		}()
	})
}
