package readside

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/pgwire"
)

// PopRequest is a validated pop of Queen's consumer API.
type PopRequest struct {
	Queue string
	// Partition "" pops any partition of the queue.
	Partition string
	Group     string
	// Batch caps the messages of the whole pop; Partitions the partitions
	// an any-partition pop may claim.
	Batch, Partitions int
	// MaxBytes bounds the whole answer (pgwire.PopCost of each message); 0:
	// no bound. At least one message is delivered.
	MaxBytes         int64
	AutoAck          bool
	SubscriptionMode string
	SubscriptionFrom time.Time
	// Wait > 0: with nothing to deliver, park until a push to the queue is
	// announced (here or by a peer), or Wait passes.
	Wait time.Duration
}

// Popped is what one pop delivered: every partition it claimed and found
// messages on, under one lease (zero with auto-ack).
type Popped struct {
	Lease [16]byte
	Parts []pgwire.PopResult
}

// maxClaimTries bounds the claims one any-partition pop makes when its
// candidates turn out to be leased or empty.
const maxClaimTries = 16

// Pop claims partitions for a group and delivers messages after its
// cursors. The any-partition pop takes its candidates from what this bridge
// knows (marks), starting at a rotating position so that consumers spread
// over the partitions. With a wait and nothing delivered it parks, costing
// no query, like a parked read: woken by announcements of the queue (or
// the partition), with the same pause after an empty wake.
func (r *Reads) Pop(ctx context.Context, tenant [16]byte, req PopRequest) (Popped, error) {
	out := Popped{}
	if !req.AutoAck {
		out.Lease = uuid.New()
	}
	k := Key{Tenant: tenant, Queue: req.Queue, Partition: req.Partition} // Partition "": the whole queue
	parts, err := lookParked(r, ctx, k, req.Wait, "pop", func() ([]pgwire.PopResult, bool, error) {
		r.pops.Add(1)
		parts, err := r.popOnce(ctx, tenant, req, out.Lease)
		return parts, len(parts) > 0, err
	})
	out.Parts = parts
	return out, err
}

// popOnce makes one round of claims.
func (r *Reads) popOnce(ctx context.Context, tenant [16]byte, req PopRequest, lease [16]byte) ([]pgwire.PopResult, error) {
	base := pgwire.PopRequest{Tenant: tenant, Queue: req.Queue, Group: req.Group, Lease: lease, AutoAck: req.AutoAck,
		SubscriptionMode: req.SubscriptionMode, SubscriptionFrom: req.SubscriptionFrom}
	if req.Partition != "" {
		pr := base
		pr.Partition, pr.Batch, pr.MaxBytes = req.Partition, req.Batch, req.MaxBytes
		res, err := r.cfg.DB.Pop(ctx, pr)
		if err != nil {
			return nil, err
		}
		r.count(res)
		if res.Status == pgwire.PopDelivered {
			return []pgwire.PopResult{res}, nil
		}
		return nil, nil
	}
	cands, err := r.marks.candidates(ctx, r.cfg.DB, tenant, req.Queue, req.Group, r.rotate.Add(1)*7919)
	if err != nil {
		return nil, err
	}
	var out []pgwire.PopResult
	left, bytesLeft := req.Batch, req.MaxBytes
	for i, c := range cands {
		// A further partition is claimed only while half the byte bound is
		// left: each delivers at least one message.
		if i >= maxClaimTries || len(out) >= req.Partitions || left <= 0 || (req.MaxBytes > 0 && len(out) > 0 && bytesLeft < req.MaxBytes/2) {
			break
		}
		pr := base
		pr.Batch, pr.MaxBytes = left, bytesLeft
		if c.id > 0 {
			pr.PartitionID = c.id
		} else {
			pr.Partition = c.p.name
		}
		res, err := r.cfg.DB.Pop(ctx, pr)
		if err != nil {
			return out, err
		}
		r.count(res)
		r.marks.outcome(tenant, req.Queue, req.Group, c, res)
		if res.Status == pgwire.PopDelivered {
			out = append(out, res)
			left -= len(res.Messages)
			for i := range res.Messages {
				bytesLeft -= pgwire.PopCost(&res.Messages[i].Frame, res.Partition, req.Group)
			}
		}
	}
	return out, nil
}

func (r *Reads) count(res pgwire.PopResult) {
	r.claims.Add(1)
	if res.Expired {
		r.leaseExpiries.Add(1)
	}
	r.delivered.Add(uint64(len(res.Messages)))
}

// Ack applies acknowledgements of one partition for one group and keeps
// the marks: a released lease no longer keeps the partition out of this
// bridge's candidates, and the release is announced, here and to peers, so
// that parked pops claim what is left or handed back (failed below the
// retry limit, retry).
func (r *Reads) Ack(ctx context.Context, tenant [16]byte, pid int64, group string, lease *[16]byte, items []pgwire.AckItem, again bool) (pgwire.AckResult, error) {
	res, err := r.cfg.DB.Ack(ctx, tenant, pid, group, lease, items)
	if err != nil || !res.Released || res.Queue == "" {
		return res, err
	}
	r.marks.released(tenant, res.Queue, res.Partition, group, again)
	// A released partition may hold more than the lease delivered, or what
	// it handed back: pops parked on it (here and at peers) claim it now
	// instead of at their timeout.
	r.Announce([]Key{{Tenant: tenant, Queue: res.Queue, Partition: res.Partition}})
	return res, nil
}
