package bridge

import (
	"context"
	"fmt"
	"time"

	"github.com/queenbridge/queenbridge/spool"
)

// spoolErrors writes every item whose status is statusError to the spool, as
// the frame it became (encrypted already where the queue asks), and answers
// it buffered; when the spool cannot take it, failed.
func (c *pushCall) spoolErrors(ctx context.Context) {
	var idx []int
	for i := range c.st {
		if c.st[i].result.status == statusError {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return
	}
	if !c.b.keeper.CanSpool() {
		for _, i := range idx {
			c.st[i].result = itemResult{status: statusFailed, errText: c.st[i].result.errText}
		}
		return
	}
	now := time.Now()
	recs := make([]spool.Record, len(idx))
	for k, i := range idx {
		f, it := c.st[i].frame, &c.items[i]
		recs[k] = spool.Record{Tenant: c.tenant, Queue: it.Queue, Partition: it.Partition, MessageID: f.ID,
			TransactionID: f.TransactionID, TraceID: f.TraceID, Flags: f.Flags, Payload: f.Payload, SpooledAt: now}
	}
	err := c.b.keeper.Spool(ctx, recs)
	for _, i := range idx {
		if err != nil {
			c.st[i].result = itemResult{status: statusFailed, errText: fmt.Sprintf("spool write failed: %v (after: %s)", err, c.st[i].result.errText)}
		} else {
			c.st[i].result = itemResult{status: statusBuffered, messageID: c.st[i].id, hasID: true}
		}
	}
}
