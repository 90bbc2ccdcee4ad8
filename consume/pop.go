package consume

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/readside"
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
	MaxBytes int64
	AutoAck  bool
	// SubscriptionMode "all" or "new" ("": Config.DefaultSubscriptionMode)
	// and SubscriptionFrom (zero: none) say where a named group's first
	// pop of the queue starts.
	SubscriptionMode string
	SubscriptionFrom time.Time
	// Wait > 0: with nothing to deliver, park until a push to the queue is
	// announced (here or by a peer), or Wait passes.
	Wait time.Duration
}

// Popped is what one pop delivered: every partition it claimed and found
// messages on, under one lease (zero with auto-ack). Payloads are as
// stored (Plain turns them into what was sent).
type Popped struct {
	Lease [16]byte
	Parts []pgwire.PopResult
}

// Count is the number of messages delivered.
func (p Popped) Count() int {
	n := 0
	for _, part := range p.Parts {
		n += len(part.Messages)
	}
	return n
}

// maxClaimTries bounds the claims one any-partition pop makes when its
// candidates turn out to be leased or empty.
const maxClaimTries = 16

// Pop claims partitions for a group and delivers messages after its
// cursors. The any-partition pop takes its candidates from what this bridge
// knows (the marks, cursors.Marks), starting at a rotating position so that
// consumers spread over the partitions. With a wait and nothing delivered
// it parks, costing no query, like a parked read: woken by announcements of
// the queue (or the partition), with the same pause after an empty wake.
// In maintenance mode, and in pop maintenance, it delivers nothing; a pop
// parked when pop maintenance begins claims nothing more.
func (c *Consumer) Pop(ctx context.Context, tenant tenancy.TenantID, req PopRequest) (Popped, error) {
	out := Popped{}
	if c.cfg.Maintenance() || c.cfg.PopMaintenance() {
		return out, nil
	}
	if !req.AutoAck {
		out.Lease = uuid.New()
	}
	if req.SubscriptionMode == "" {
		req.SubscriptionMode = c.cfg.DefaultSubscriptionMode
	}
	// The hot tail keeps the queue's commits from now on.
	c.cfg.Tail.Want(tenant, req.Queue)
	parts, err := c.popParked(ctx, tenant, req, out.Lease)
	out.Parts = parts
	if err == nil || len(parts) > 0 {
		c.cfg.Observer.Popped(out.Count())
	}
	return out, err
}

// popParked makes rounds of claims until one delivers, parking between
// them on the queue's key (or the partition's) for up to req.Wait. The
// read side only says when to look again (readside.Parking): the claims
// run here, so the walk goes down and never back from the read side.
func (c *Consumer) popParked(ctx context.Context, tenant tenancy.TenantID, req PopRequest, lease [16]byte) ([]pgwire.PopResult, error) {
	park := c.cfg.Reads.Park(ctx, readside.Key{Tenant: tenant, Queue: req.Queue, Partition: req.Partition}, req.Wait, "pop") // Partition "": the whole queue
	defer park.Close()
	for {
		var parts []pgwire.PopResult
		var err error
		if !c.cfg.PopMaintenance() {
			c.pops.Add(1)
			parts, err = c.claimRound(ctx, tenant, req, lease)
		}
		if err != nil || len(parts) > 0 {
			return parts, err
		}
		if again, err := park.Again(); !again {
			return parts, err
		}
	}
}

// claimRound makes one round of claims: the named partition, or up to
// req.Partitions of the queue's candidates (at most maxClaimTries claims),
// until req.Batch messages or the byte bound are reached.
func (c *Consumer) claimRound(ctx context.Context, tenant tenancy.TenantID, req PopRequest, lease [16]byte) ([]pgwire.PopResult, error) {
	base := pgwire.PopRequest{Tenant: tenant, Queue: req.Queue, Group: req.Group, Lease: lease, AutoAck: req.AutoAck,
		SubscriptionMode: req.SubscriptionMode, SubscriptionFrom: req.SubscriptionFrom}
	if req.Partition != "" {
		pr := base
		pr.Partition, pr.Batch, pr.MaxBytes = req.Partition, req.Batch, req.MaxBytes
		res, err := c.popOne(ctx, pr)
		if err != nil {
			return nil, err
		}
		c.count(res)
		if res.Status == pgwire.PopDelivered {
			return []pgwire.PopResult{res}, nil
		}
		return nil, nil
	}
	cands, err := c.cfg.Marks.Candidates(ctx, tenant, req.Queue, req.Group)
	if err != nil {
		return nil, err
	}
	out, cands, refused, err := c.claimTailRound(ctx, tenant, req, base, cands)
	if err != nil {
		return nil, err
	}
	left, bytesLeft := req.Batch, req.MaxBytes
	for i := range out {
		left -= len(out[i].Messages)
		bytesLeft -= messagesCost(out[i].Messages, out[i].Partition, req.Group, req.MaxBytes)
	}
	for i, cand := range cands {
		// A further partition is claimed only while half the byte bound is
		// left: each delivers at least one message.
		if i+len(out) >= maxClaimTries || len(out) >= req.Partitions || left <= 0 || (req.MaxBytes > 0 && len(out) > 0 && bytesLeft < req.MaxBytes/2) {
			c.unreserve(tenant, req, cands[i:max(i, refused)]) // reserved by the tail's round
			break
		}
		if i >= refused && !c.cfg.Marks.Reserve(tenant, req.Queue, req.Group, cand) {
			continue // another pop here is claiming it
		}
		pr := base
		pr.Batch, pr.MaxBytes = left, bytesLeft
		if cand.ID > 0 {
			pr.PartitionID = cand.ID
		} else {
			pr.Partition = cand.Name
		}
		pop := c.popOne
		if i < refused { // the tail refused it this round
			pop = c.popDB
		}
		res, err := pop(ctx, pr)
		if err != nil {
			c.unreserve(tenant, req, cands[i:max(i+1, refused)])
			return out, err
		}
		c.count(res)
		c.cfg.Marks.Outcome(tenant, req.Queue, req.Group, cand, res)
		if res.Status == pgwire.PopDelivered {
			out = append(out, res)
			left -= len(res.Messages)
			bytesLeft -= messagesCost(res.Messages, res.Partition, req.Group, req.MaxBytes) // none without a bound
		}
	}
	return out, nil
}

func (c *Consumer) count(res pgwire.PopResult) {
	c.claims.Add(1)
	if res.Expired {
		c.leaseExpiries.Add(1)
	}
	c.delivered.Add(uint64(len(res.Messages)))
}
