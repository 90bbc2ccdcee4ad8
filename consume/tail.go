package consume

import (
	"cmp"
	"context"
	"math"
	"slices"

	"github.com/queenbridge/queenbridge/cursors"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
)

// popOne pops one partition: from the hot tail when this bridge holds the
// segments after the group's cursor (one claim, no segment read), else
// through the database's pop. Either way it notes the cursor it saw, so
// that the next pop can be served from memory.
func (c *Consumer) popOne(ctx context.Context, pr pgwire.PopRequest) (pgwire.PopResult, error) {
	if t := c.cfg.Tail; t != nil && pr.PartitionID == 0 && pr.Partition != "" {
		if pid, ok := t.PartitionID(pr.Tenant, pr.Queue, pr.Partition); ok {
			pr.PartitionID = pid
		}
	}
	if claim, msgs, ok := c.tailTake(pr); ok {
		res, err := c.claimTails(ctx, pr, []pgwire.TailClaim{claim}, [][]pgwire.Message{msgs})
		if err != nil {
			return pgwire.PopResult{}, err
		}
		if res[0].Status == pgwire.PopDelivered {
			return res[0], nil
		}
	}
	return c.popDB(ctx, pr)
}

// popDB pops one partition through the database's pop, noting the cursor
// it saw.
func (c *Consumer) popDB(ctx context.Context, pr pgwire.PopRequest) (pgwire.PopResult, error) {
	res, err := c.cfg.DB.Pop(ctx, pr)
	if err == nil {
		c.noteCursor(pr, res)
	}
	return res, err
}

// tailTake looks up what the hot tail would deliver for pr (by partition
// id), with its messages cut at pr.MaxBytes.
func (c *Consumer) tailTake(pr pgwire.PopRequest) (pgwire.TailClaim, []pgwire.Message, bool) {
	t := c.cfg.Tail
	if t == nil || pr.PartitionID <= 0 {
		return pgwire.TailClaim{}, nil, false
	}
	take, ok := t.Take(pr.PartitionID, pr.Group, pr.Batch)
	if !ok {
		return pgwire.TailClaim{}, nil, false
	}
	msgs, err := tailMessages(&take, pr)
	if err != nil || len(msgs) == 0 {
		t.Note(false)
		t.SetCursor(pr.PartitionID, pr.Group, -1)
		return pgwire.TailClaim{}, nil, false
	}
	return pgwire.TailClaim{Tenant: pr.Tenant, Group: pr.Group, Lease: pr.Lease, AutoAck: pr.AutoAck,
		PartitionID: pr.PartitionID, Cursor: take.Cursor, To: take.To, Count: take.Count,
		Hashes: take.Hashes, FirstEnd: take.FirstEnd}, msgs, true
}

// claimTails claims deliveries from the hot tail (one or many partitions of
// one pop, under its lease) in one statement, fused with the claims of
// concurrent pops (claimFuser). out[i] answers claims[i]: delivered with
// msgs[i], or Status "" when the database did not match it (the tail
// forgets the cursor it had; the caller reads PostgreSQL).
func (c *Consumer) claimTails(ctx context.Context, pr pgwire.PopRequest, claims []pgwire.TailClaim, msgs [][]pgwire.Message) ([]pgwire.PopResult, error) {
	out, err := c.tailClaims.do(ctx, claims)
	if err != nil {
		return nil, err
	}
	t := c.cfg.Tail
	for i := range out {
		if out[i].Status != pgwire.PopDelivered {
			t.Note(false)
			t.SetCursor(claims[i].PartitionID, pr.Group, -1) // wrong, or unusable: learn it again
			continue
		}
		t.Note(true)
		out[i].Messages = msgs[i]
		c.noteCursor(pr, out[i])
	}
	return out, nil
}

// claimTailRound is the part of an any-partition pop's round the hot tail
// can serve: takes of the candidates it holds (within the round's bounds),
// claimed together in one statement. Each candidate is reserved before it
// is taken (cursors.Marks.Reserve): one another pop here is claiming is
// passed over. The first candidate the tail cannot
// serve ends it: deepestFirst put it before those the tail can serve
// because it is furthest behind, and the database serves it first (were
// later candidates claimed from memory, a pop of one partition would never
// reach it while they keep getting commits). It answers what was
// delivered, the candidates left for the database in order, and how many
// of those, first, the tail has already refused (they go straight to
// PostgreSQL; they are reserved, the others not yet).
func (c *Consumer) claimTailRound(ctx context.Context, tenant tenancy.TenantID, req PopRequest, base pgwire.PopRequest,
	cands []cursors.Candidate) ([]pgwire.PopResult, []cursors.Candidate, int, error) {
	if c.cfg.Tail == nil {
		return nil, cands, 0, nil
	}
	cands = c.deepestFirst(req, cands)
	var claims []pgwire.TailClaim
	var msgs [][]pgwire.Message
	var from []cursors.Candidate
	var rest []cursors.Candidate
	refused := 0
	left, bytesLeft := req.Batch, req.MaxBytes
	for i, cand := range cands {
		if i >= maxClaimTries || len(claims) >= req.Partitions || left <= 0 || (req.MaxBytes > 0 && len(claims) > 0 && bytesLeft < req.MaxBytes/2) {
			rest = append(rest, cands[i:]...)
			break
		}
		if !c.cfg.Marks.Reserve(tenant, req.Queue, req.Group, cand) {
			continue // another pop here is claiming it
		}
		pr := base
		pr.Batch, pr.MaxBytes, pr.PartitionID = left, bytesLeft, cand.ID
		if pr.PartitionID == 0 {
			pr.PartitionID, _ = c.cfg.Tail.PartitionID(tenant, req.Queue, cand.Name)
		}
		claim, m, ok := c.tailTake(pr)
		if !ok {
			rest, refused = append(rest, cands[i:]...), 1
			break
		}
		claims, msgs, from = append(claims, claim), append(msgs, m), append(from, cand)
		left -= len(m)
		bytesLeft -= messagesCost(m, cand.Name, req.Group, req.MaxBytes)
	}
	if len(claims) == 0 {
		return nil, rest, refused, nil
	}
	res, err := c.claimTails(ctx, base, claims, msgs)
	if err != nil {
		// The candidate the tail could not serve is reserved too.
		c.unreserve(tenant, req, append(from, rest[:refused]...))
		return nil, cands, 0, err
	}
	var out []pgwire.PopResult
	var missed []cursors.Candidate
	for i, r := range res {
		if r.Status != pgwire.PopDelivered {
			missed = append(missed, from[i])
			continue
		}
		c.count(r)
		c.cfg.Marks.Outcome(tenant, req.Queue, req.Group, from[i], r)
		out = append(out, r)
	}
	return out, append(missed, rest...), len(missed) + refused, nil
}

// unreserve frees reservations whose claims were not made or failed.
func (c *Consumer) unreserve(tenant tenancy.TenantID, req PopRequest, cands []cursors.Candidate) {
	for _, cand := range cands {
		c.cfg.Marks.Outcome(tenant, req.Queue, req.Group, cand, pgwire.PopResult{})
	}
}

// deepestWindow is how many of an any-partition pop's candidates, from its
// rotating start, are ordered by what they hold.
const deepestWindow = maxClaimTries

// emptyRecheck: one ordering in this many does not trust the tail's "empty"
// (deepestFirst).
const emptyRecheck = 16

// deepestFirst orders the first candidates of a pop that claims fewer
// partitions than it has candidates by what each holds after the group's
// cursor, most first (stable, so the rotation decides among equals). A
// partition whose pending count the tail does not know (its cursor is below
// what the tail holds, or unknown) goes first: it is the one furthest
// behind. Consumers that keep up then take full batches from the partitions
// that gathered most, instead of a few messages from whichever partition the
// rotation names; every partition still comes into the window as the
// rotation moves, and its count grows while it waits.
//
// A partition the tail knows to be empty for the group goes last, but not
// on every pop: it is a candidate because an announcement says it may hold
// something, and what another bridge wrote to it never reaches this tail.
// One ordering in emptyRecheck takes the tail's zero as not known, so the
// database looks (an empty pop there writes nothing and clears the mark)
// and no partition waits forever behind others the tail keeps serving.
func (c *Consumer) deepestFirst(req PopRequest, cands []cursors.Candidate) []cursors.Candidate {
	if req.Partitions >= len(cands) || len(cands) < 2 {
		return cands
	}
	recheck := c.orderings.Add(1)%emptyRecheck == 0
	n := min(len(cands), deepestWindow)
	type deep struct {
		cand  cursors.Candidate
		depth int64
	}
	window := make([]deep, n)
	for i, cand := range cands[:n] {
		d, known := c.cfg.Tail.Pending(cand.ID, req.Group)
		if !known || cand.ID == 0 || (d == 0 && recheck) {
			d = math.MaxInt64
		}
		window[i] = deep{cand, d}
	}
	slices.SortStableFunc(window, func(a, b deep) int { return cmp.Compare(b.depth, a.depth) })
	out := make([]cursors.Candidate, len(cands))
	for i := range window {
		out[i] = window[i].cand
	}
	copy(out[n:], cands[n:])
	return out
}

// messagesCost is what msgs add to an answer bounded to maxBytes (0: no
// bound, nothing is counted).
func messagesCost(msgs []pgwire.Message, partition, group string, maxBytes int64) int64 {
	if maxBytes <= 0 {
		return 0
	}
	var n int64
	for i := range msgs {
		n += pgwire.PopCost(&msgs[i].Frame, partition, group)
	}
	return n
}

// noteCursor records the group's cursor a pop saw: after an auto-ack
// delivery its end, after a delivery under a lease the cursor it delivered
// after (an ack moves it: noteAcked), after an empty pop where it stands.
func (c *Consumer) noteCursor(pr pgwire.PopRequest, res pgwire.PopResult) {
	switch {
	case c.cfg.Tail == nil || res.PartitionID <= 0:
	case res.Status == pgwire.PopDelivered && pr.AutoAck:
		c.cfg.Tail.SetCursor(res.PartitionID, pr.Group, res.To)
	case res.Status == pgwire.PopDelivered || res.Status == pgwire.PopEmpty:
		c.cfg.Tail.SetCursor(res.PartitionID, pr.Group, res.Cursor)
	}
}

// noteAcked records the cursor an acknowledgement left.
func (c *Consumer) noteAcked(pid int64, group string, cursor int64) {
	c.cfg.Tail.SetCursor(pid, group, cursor)
}

// tailMessages decodes what a take delivers, cut at the request's byte
// bound (at least one message) as popDecode cuts what PostgreSQL answered;
// a cut take is shortened before it is claimed, so the claim records
// exactly what goes out.
func tailMessages(take *cursors.TailTake, pr pgwire.PopRequest) ([]pgwire.Message, error) {
	msgs := make([]pgwire.Message, 0, take.Count)
	var cost int64
	for _, s := range take.Segments {
		frames, err := s.Frames()
		if err != nil {
			return nil, err
		}
		for k := range frames {
			off := s.Base + int64(k)
			if off <= take.Cursor || off > take.To {
				continue
			}
			cost += pgwire.PopCost(&frames[k], take.Partition, pr.Group)
			if pr.MaxBytes > 0 && len(msgs) > 0 && cost > pr.MaxBytes {
				take.Cut(len(msgs))
				return msgs, nil
			}
			msgs = append(msgs, pgwire.Message{Offset: off, Frame: frames[k], CreatedAt: s.CreatedAt})
		}
	}
	return msgs, nil
}
