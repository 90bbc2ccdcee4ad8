package consume

import (
	"bytes"
	"cmp"
	"context"
	"slices"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
)

// AckStatus is what a consumer says of one message.
type AckStatus string

// The statuses of Queen's acknowledgements.
const (
	Completed  AckStatus = "completed"
	Success    AckStatus = "success" // Queen's other word for completed
	Failed     AckStatus = "failed"  // delivered again, until the retry limit sends it to the dead letters
	DeadLetter AckStatus = "dlq"     // to the dead letters now
	Retry      AckStatus = "retry"   // delivered again, counting no attempt
)

// handsBack reports whether an ack of this status, whose message went to
// the dead letters or not, makes the message deliverable again: a retry
// always, a failure below the retry limit (not dead-lettered). The
// partition is then announced, so that parked pops claim it at once.
func (s AckStatus) handsBack(deadLettered bool) bool {
	return s == Retry || (s == Failed && !deadLettered)
}

// Ack is one acknowledgement.
type Ack struct {
	TransactionID string
	PartitionID   int64
	Group         string
	// Lease is the lease the message was delivered under; nil: not checked.
	Lease  *[16]byte
	Status AckStatus
	Error  string
}

// AckOutcome answers one acknowledgement.
type AckOutcome struct {
	TransactionID string
	// Err is "" when the ack applied, else why not.
	Err              string
	Queue, Partition string
	// LeaseReleased: the lease ended with this call (every message it
	// delivered is acknowledged, or one was handed back).
	LeaseReleased bool
	// DeadLettered: the message was written to the dead letters.
	DeadLettered bool
}

// ackGroup is the acks of one (partition, group, lease): one database call.
type ackGroup struct {
	pid   int64
	group string
	lease *[16]byte
	idx   []int // the acks' indexes in the request, in request order
}

// groupAcks groups acks by (partition, group, lease) and orders the groups
// in the one lock order: ascending partition id (then group, then lease,
// so that the order is the same for every request).
func groupAcks(acks []Ack) []ackGroup {
	type key struct {
		pid   int64
		group string
		lease [16]byte
		has   bool
	}
	at := map[key]int{}
	var groups []ackGroup
	for i, a := range acks {
		k := key{pid: a.PartitionID, group: a.Group}
		if a.Lease != nil {
			k.lease, k.has = *a.Lease, true
		}
		g, ok := at[k]
		if !ok {
			g = len(groups)
			at[k] = g
			groups = append(groups, ackGroup{pid: a.PartitionID, group: a.Group, lease: a.Lease})
		}
		groups[g].idx = append(groups[g].idx, i)
	}
	slices.SortStableFunc(groups, func(x, y ackGroup) int {
		if c := cmp.Compare(x.pid, y.pid); c != 0 {
			return c
		}
		if c := cmp.Compare(x.group, y.group); c != 0 {
			return c
		}
		return bytes.Compare(leaseBytes(x.lease), leaseBytes(y.lease))
	})
	return groups
}

func leaseBytes(l *[16]byte) []byte {
	if l == nil {
		return nil
	}
	return l[:]
}

// Ack applies acknowledgements: grouped by (partition, group, lease). A
// group that names everything its lease delivered, in delivery order, with
// one status (what Queen's clients send for a batch) is a whole-batch
// acknowledgement: one compare-and-set of the cursor row, fused with those
// of concurrent requests (ackFuser, pgwire.AckWhole). Every other group, and
// a whole-batch one the database did not match, is one consumer_ack_v1
// call, in ascending partition id, so that two requests touching the same
// partitions lock their rows in the same order. It answers in input order.
// A group whose call fails answers every one of its acks with the error;
// the others still apply.
func (c *Consumer) Ack(ctx context.Context, tenant tenancy.TenantID, acks []Ack) []AckOutcome {
	out := make([]AckOutcome, len(acks))
	groups := groupAcks(acks)
	done := c.ackWhole(ctx, tenant, acks, groups, out)
	for k, g := range groups {
		if done[k] {
			continue
		}
		items := make([]pgwire.AckItem, len(g.idx))
		for j, i := range g.idx {
			items[j] = pgwire.AckItem{TransactionID: acks[i].TransactionID, Status: string(acks[i].Status), Error: acks[i].Error}
		}
		res, err := c.cfg.DB.Ack(ctx, tenant, g.pid, g.group, g.lease, items)
		again := false
		for j, i := range g.idx {
			o := AckOutcome{TransactionID: acks[i].TransactionID, Queue: res.Queue, Partition: res.Partition, LeaseReleased: res.Released}
			switch {
			case err != nil:
				o.Err = err.Error()
			case res.Errs[j] != "":
				o.Err = res.Errs[j]
			default:
				o.DeadLettered = res.DLQ[j]
				again = again || acks[i].Status.handsBack(o.DeadLettered)
			}
			out[i] = o
			c.cfg.Observer.Acked(string(acks[i].Status), o.Err == "", o.DeadLettered)
		}
		if err == nil && res.Queue != "" {
			c.noteAcked(g.pid, g.group, res.Cursor)
		}
		if err == nil && res.Released && res.Queue != "" {
			c.leaseEnded(tenant, res.Queue, res.Partition, g.group, again)
		}
	}
	return out
}
