package consume

import (
	"context"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/readside"
)

// Extend sets a live lease's expiry to at least now + seconds on every
// partition it holds; ok is false when the lease is unknown or expired.
func (c *Consumer) Extend(ctx context.Context, tenant tenancy.TenantID, lease [16]byte, seconds int) (expires time.Time, ok bool, err error) {
	return c.cfg.DB.ExtendLease(ctx, tenant, lease, seconds)
}

// leaseEnded tells the marks that a lease on a partition ended (again: its
// messages after the cursor are deliverable again: an ack handed them back,
// a seek or a delete moved the cursor) and announces the partition, here
// and to peers: it may hold more than the lease delivered, or what it
// handed back, and pops parked on it claim it now instead of at their
// timeout.
func (c *Consumer) leaseEnded(tenant tenancy.TenantID, queue, partition, group string, again bool) {
	c.cfg.Marks.Released(tenant, queue, partition, group, again)
	c.cfg.Reads.Announce([]readside.Key{{Tenant: tenant, Queue: queue, Partition: partition}})
}
