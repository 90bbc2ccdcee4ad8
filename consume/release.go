package consume

import (
	"context"
	"fmt"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// settleTimeout bounds settling a pop's claim (settle): long enough for
// the acknowledgement to queue behind others on a busy pool.
const settleTimeout = 10 * time.Second

// release hands back everything a pop delivered under its lease, in the
// same request, when it cannot be answered: an acknowledgement with status
// retry of each partition's whole delivery, which counts no attempt and
// ends the lease, so the messages may be claimed again at once (here and,
// announced, on peers) instead of staying leased until the lease expires.
func (c *Consumer) release(ctx context.Context, tenant tenancy.TenantID, group string, got Popped) error {
	return c.settle(ctx, tenant, group, got, Retry)
}

// settle acknowledges every message a pop delivered under its lease with
// one status. It runs on a context the requester's going away does not
// cancel: what was claimed for it must be settled all the same.
func (c *Consumer) settle(ctx context.Context, tenant tenancy.TenantID, group string, got Popped, status AckStatus) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	acks := make([]Ack, 0, got.Count())
	for _, p := range got.Parts {
		for i := range p.Messages {
			acks = append(acks, Ack{TransactionID: p.Messages[i].Frame.TransactionID, PartitionID: p.PartitionID, Group: group,
				Lease: &got.Lease, Status: status})
		}
	}
	for i, o := range c.Ack(ctx, tenant, acks) {
		if o.Err != "" {
			return fmt.Errorf("%s the message %q of partition id %d: %s", status, acks[i].TransactionID, acks[i].PartitionID, o.Err)
		}
	}
	return nil
}
