package consume

import (
	"context"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
)

// maxWholeAck bounds the messages of one whole-batch acknowledgement; a
// larger group takes the general path.
const maxWholeAck = 10000

// wholeStatus is the one status of a group's acks when it may be a
// whole-batch acknowledgement ("" and success are completed), or "".
func wholeStatus(acks []Ack, g ackGroup) AckStatus {
	if g.lease == nil || len(g.idx) == 0 || len(g.idx) > maxWholeAck {
		return ""
	}
	norm := func(s AckStatus) AckStatus {
		if s == "" || s == Success {
			return Completed
		}
		return s
	}
	st := norm(acks[g.idx[0]].Status)
	switch st {
	case Completed, Failed, DeadLetter, Retry:
	default:
		return ""
	}
	seen := make(map[string]struct{}, len(g.idx))
	for _, i := range g.idx {
		if norm(acks[i].Status) != st {
			return ""
		}
		if _, dup := seen[acks[i].TransactionID]; dup {
			return ""
		}
		seen[acks[i].TransactionID] = struct{}{}
	}
	return st
}

// ackWhole sends the groups that may be whole-batch acknowledgements to
// the fuser, answers those the database applied into out, and reports
// which groups it answered. A group it did not answer wrote nothing.
func (c *Consumer) ackWhole(ctx context.Context, tenant tenancy.TenantID, acks []Ack, groups []ackGroup, out []AckOutcome) []bool {
	done := make([]bool, len(groups))
	if c.cfg.GeneralAcksOnly {
		return done
	}
	var whole []pgwire.WholeAck
	var at []int // group index of each whole ack
	for k, g := range groups {
		st := wholeStatus(acks, g)
		if st == "" {
			continue
		}
		w := pgwire.WholeAck{Tenant: tenant, PID: g.pid, Group: g.group, Lease: *g.lease, Status: string(st),
			TransactionIDs: make([]string, len(g.idx)), Errors: make([]string, len(g.idx))}
		for j, i := range g.idx {
			w.TransactionIDs[j], w.Errors[j] = acks[i].TransactionID, acks[i].Error
		}
		whole = append(whole, w)
		at = append(at, k)
	}
	if len(whole) == 0 {
		return done
	}
	res, err := c.acks.do(ctx, whole)
	if err != nil {
		return done // the general path answers each item (had the statement committed, with the lease no longer held)
	}
	for j, r := range res {
		if !r.Applied {
			continue
		}
		g := groups[at[j]]
		st := AckStatus(whole[j].Status)
		for _, i := range g.idx {
			out[i] = AckOutcome{TransactionID: acks[i].TransactionID, Queue: r.Queue, Partition: r.Partition, LeaseReleased: true, DeadLettered: r.DeadLettered}
			c.cfg.Observer.Acked(string(acks[i].Status), true, r.DeadLettered)
		}
		c.wholeAcks.Add(1)
		c.noteAcked(g.pid, g.group, r.Cursor)
		c.leaseEnded(tenant, r.Queue, r.Partition, g.group, st.handsBack(r.DeadLettered))
		done[at[j]] = true
	}
	return done
}
