package consume

import (
	"context"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
)

// The changes an operator makes to a consumer group's cursors (Queen's
// admin routes, docs/admin-groups.md): they go through this room because cursors and
// leases are its state, and two things besides the database must hear of
// them. The marks (cursors.Marks), so that an any-partition pop takes the
// partitions as claimable again (a seek backwards makes a drained partition
// deliver again; a delete or a seek drops the lease this bridge's hint
// remembers); announcing them also tells peers and wakes parked pops. And
// the hot tail's note of the group's cursor on each partition, which would
// otherwise steer the next pop to where the cursor was (the tail claim's
// compare-and-set would refuse it, at the cost of a wasted claim).

// SeekGroup moves the group's cursors on a queue (or one partition of it):
// to the end, or to just before the first message created after req.At
// (pgwire.SeekGroup). Cursors the group lacks are made; every lease on
// them is dropped, so acknowledgements of what it delivered fail. It
// answers the partitions set; none when the queue or partition is unknown.
func (c *Consumer) SeekGroup(ctx context.Context, req pgwire.SeekRequest) ([]pgwire.GroupPartition, error) {
	parts, err := c.cfg.DB.SeekGroup(ctx, req)
	if err != nil {
		return nil, err
	}
	c.cursorsChanged(req.Tenant, req.Group, parts)
	return parts, nil
}

// DeleteGroup removes the group's cursors and leases on a queue of the
// tenant ("": on all its queues), and with subscriptions the group's stored
// subscriptions there; dead letters stay. The next pop seeds the cursors
// again, from the kept subscription or from its own parameters. It answers
// the partitions whose cursor went.
func (c *Consumer) DeleteGroup(ctx context.Context, tenant tenancy.TenantID, group, queue string, subscriptions bool) ([]pgwire.GroupPartition, error) {
	parts, err := c.cfg.DB.DeleteGroup(ctx, tenant, group, queue, subscriptions)
	if err != nil {
		return nil, err
	}
	c.cursorsChanged(tenant, group, parts)
	return parts, nil
}

// cursorsChanged tells the hot tail and the marks that the group's cursors
// on parts moved or went, and announces the partitions.
func (c *Consumer) cursorsChanged(tenant tenancy.TenantID, group string, parts []pgwire.GroupPartition) {
	for _, p := range parts {
		c.cfg.Tail.SetCursor(p.PartitionID, group, -1)
		c.leaseEnded(tenant, p.Queue, p.Partition, group, true)
	}
}
