package push

import (
	"context"
	"fmt"

	"github.com/queenbridge/queenbridge/durability"
	"github.com/queenbridge/queenbridge/jsonapi"
)

// spoolErrors writes every item whose status is statusError to the spool, as
// the frame it became (encrypted already where the queue asks), and answers
// it buffered; when the spool cannot take it, failed.
func (c *pushCall) spoolErrors(ctx context.Context) {
	var idx []int
	for i := range c.st {
		if c.st[i].result.Status == statusError {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return
	}
	if !c.p.cfg.Keeper.CanSpool() {
		for _, i := range idx {
			c.st[i].result = jsonapi.Result{Status: jsonapi.StatusFailed, Error: c.st[i].result.Error}
		}
		return
	}
	failed := make([]durability.Failed, len(idx))
	for k, i := range idx {
		failed[k] = durability.Failed{Queue: c.items[i].Queue, Partition: c.items[i].Partition, Frame: c.st[i].frame}
	}
	err := c.p.cfg.Keeper.Spool(ctx, c.tenant, failed)
	for _, i := range idx {
		if err != nil {
			c.st[i].result = jsonapi.Result{Status: jsonapi.StatusFailed, Error: fmt.Sprintf("spool write failed: %v (after: %s)", err, c.st[i].result.Error)}
		} else {
			c.st[i].result = jsonapi.Result{Status: jsonapi.StatusBuffered, MessageID: c.st[i].id, HasID: true}
		}
	}
}
