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
	_, err := c.settle(ctx, tenant, group, got, Retry)
	return err
}

// settle acknowledges every message a pop delivered under its lease with
// one status. It runs on a context the requester's going away does not
// cancel: what was claimed for it must be settled all the same. Each
// partition's acknowledgement applies or fails on its own (Ack): failed[i]
// says that of got.Parts[i], and err is the first failure.
func (c *Consumer) settle(ctx context.Context, tenant tenancy.TenantID, group string, got Popped, status AckStatus) (failed []bool, err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	acks := make([]Ack, 0, got.Count())
	part := make([]int, 0, got.Count()) // the part of each ack
	for k, p := range got.Parts {
		for i := range p.Messages {
			acks = append(acks, Ack{TransactionID: p.Messages[i].Frame.TransactionID, PartitionID: p.PartitionID, Group: group,
				Lease: &got.Lease, Status: status})
			part = append(part, k)
		}
	}
	failed = make([]bool, len(got.Parts))
	for i, o := range c.Ack(ctx, tenant, acks) {
		if o.Err == "" {
			continue
		}
		failed[part[i]] = true
		if err == nil {
			err = fmt.Errorf("%s the message %q of partition %q: %s", status, acks[i].TransactionID, got.Parts[part[i]].Partition, o.Err)
		}
	}
	return failed, err
}
