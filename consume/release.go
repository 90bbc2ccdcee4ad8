package consume

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
)

// settleTimeout bounds handing back or acknowledging a pop's claim on the
// pop's behalf (release, settle): long enough for the acknowledgement to
// queue behind others on a busy pool.
const settleTimeout = 10 * time.Second

// claim is what releasing one partition's delivery needs: not the
// payloads, which a pop whose answer is remembered for a cancel must not
// keep.
type claim struct {
	pid          int64
	partition    string
	cursor, to   int64
	txids        []string
	queue, group string
	lease        [16]byte
	autoAck      bool
	tenant       tenancy.TenantID
}

// claimsOf keeps what release needs of a pop's deliveries.
func claimsOf(tenant tenancy.TenantID, queue, group string, autoAck bool, got Popped) []claim {
	out := make([]claim, len(got.Parts))
	for i, p := range got.Parts {
		txids := make([]string, len(p.Messages))
		for k := range p.Messages {
			txids[k] = p.Messages[k].Frame.TransactionID
		}
		out[i] = claim{pid: p.PartitionID, partition: p.Partition, cursor: p.Cursor, to: p.To, txids: txids,
			queue: queue, group: group, lease: got.Lease, autoAck: autoAck, tenant: tenant}
	}
	return out
}

// release hands back deliveries whose answer never reaches a consumer (it
// is larger than the transport carries, or the requester left), so that
// nothing stays leased for nobody and nothing auto-acknowledged is lost.
// Under a lease it is an acknowledgement `retry` of every message the lease
// delivered on the partition: the lease ends, no attempt is counted, and
// the partition is announced so that parked pops claim it at once. With
// auto-ack the cursor goes back where the claim found it, unless something
// moved it since (another auto-ack pop of the group delivered after it;
// then the delivery stays consumed, and the error says so). It runs on a
// context of its own: the request's may be done.
func (c *Consumer) release(ctx context.Context, claims []claim) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	var errs []error
	for i := range claims {
		cl := &claims[i]
		if cl.autoAck {
			ok, err := c.cfg.DB.UnclaimAutoAck(ctx, cl.pid, cl.group, cl.cursor, cl.to)
			switch {
			case err != nil:
				errs = append(errs, err)
				continue
			case !ok:
				errs = append(errs, fmt.Errorf("partition %s: the cursor moved past an undelivered auto-acknowledged claim (offsets %d..%d)",
					cl.partition, cl.cursor+1, cl.to))
				continue
			}
			if c.cfg.Tail != nil {
				c.cfg.Tail.SetCursor(cl.pid, cl.group, -1) // the tail noted the claim's end: learn it again
			}
			c.leaseEnded(cl.tenant, cl.queue, cl.partition, cl.group, true)
			c.released.Add(1)
			continue
		}
		lease := cl.lease
		acks := make([]Ack, len(cl.txids))
		for k, id := range cl.txids {
			acks[k] = Ack{TransactionID: id, PartitionID: cl.pid, Group: cl.group, Lease: &lease, Status: Retry}
		}
		for _, o := range c.Ack(ctx, cl.tenant, acks) {
			if o.Err != "" {
				errs = append(errs, fmt.Errorf("partition %s: handing back %s: %s", cl.partition, o.TransactionID, o.Err))
				break
			}
		}
		c.released.Add(1)
	}
	return errors.Join(errs...)
}

// releaseParts is release of a pop's deliveries, as Pop returned them.
func (c *Consumer) releaseParts(ctx context.Context, tenant tenancy.TenantID, queue, group string, autoAck bool, got Popped, parts []pgwire.PopResult) error {
	got.Parts = parts
	return c.release(ctx, claimsOf(tenant, queue, group, autoAck, got))
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
