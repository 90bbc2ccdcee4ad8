package consume

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/push"
	"github.com/queenbridge/queenbridge/readside"
	"github.com/queenbridge/queenbridge/segment"
)

// Queen's transaction wire (docs/transactions.md): pushes and
// acknowledgements that commit together or not at all. This room owns the
// call because its acknowledgements are the consumer state's, in the one
// lock order and with the consumer API's rules (docs/consumers.md); the pushes are prepared by the
// push room exactly as a push's are (ids, transactionIds, sealing,
// grouping), and both are written in one PostgreSQL transaction by one
// pgwire call, never fused into a bundle and never spooled.

// Preparer prepares a transaction's pushes as a push's are; *push.Pusher
// satisfies it.
type Preparer interface {
	PrepareTxn(ctx context.Context, tenant tenancy.TenantID, items []jsonapi.Item) (push.Prepared, error)
}

// The outcomes of a transaction request (Observer.Transaction).
const (
	TxnCommitted  = "committed"   // answered success true
	TxnRolledBack = "rolled_back" // answered success false: aborted, rolled back, or of unknown outcome
	TxnRefused    = "refused"     // not attempted: 400, 503
)

// errTxnMaintenance answers a transaction in maintenance mode.
const errTxnMaintenance = "maintenance mode is on: transactions are not run while nothing may reach PostgreSQL; send it again once it ends"

// ServeTransaction runs a decoded transaction (jsonapi.DecodeTransaction;
// the transport answers, and counts as TxnRefused, a body that does not
// decode) and answers it: 200 with success true or false, 503 when it was
// not attempted (maintenance mode, shutting down, no connection).
func (c *Consumer) ServeTransaction(ctx context.Context, tenant tenancy.TenantID, ops []jsonapi.TxnOp) (int, []byte) {
	switch {
	case c.cfg.Stopping():
		c.cfg.Observer.Transaction(TxnRefused)
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, push.ErrStopping)
	case c.cfg.Maintenance():
		c.cfg.Observer.Transaction(TxnRefused)
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, errTxnMaintenance)
	}
	id := uuid.Must(uuid.NewV7())
	// Once sent, a transaction runs to its end (bounded by the statement
	// timeout) even if its client went away: cancelling it midway would
	// leave its outcome unknown, to nobody's gain.
	status, body, outcome := c.transaction(context.WithoutCancel(ctx), tenant, id, ops)
	c.cfg.Observer.Transaction(outcome)
	return status, body
}

// txnCall is one transaction between decode and answer.
type txnCall struct {
	ops    []jsonapi.TxnOp
	items  []jsonapi.Item // the push items, in request order
	itemOp []int          // the operation index of each
	acks   []Ack          // the acknowledgements, in request order
	ackOp  []int          // the operation index of each
}

func (c *Consumer) transaction(ctx context.Context, tenant tenancy.TenantID, id [16]byte, ops []jsonapi.TxnOp) (int, []byte, string) {
	t := &txnCall{ops: ops}
	for i, op := range ops {
		if op.Push {
			t.items = append(t.items, op.Item)
			t.itemOp = append(t.itemOp, i)
			continue
		}
		status := AckStatus(op.Ack.Status)
		if status == Failed {
			status = DeadLetter // Queen's transaction dead-letters a failure at once
		}
		t.acks = append(t.acks, Ack{TransactionID: op.Ack.TransactionID, PartitionID: op.Ack.PartitionID, Group: op.Ack.ConsumerGroup,
			Lease: op.Ack.Lease, Status: status, Error: op.Ack.Error})
		t.ackOp = append(t.ackOp, i)
	}
	fail := func(msg string) (int, []byte, string) {
		return jsonapi.StatusOK, jsonapi.AppendTxnFailure(nil, id, msg), TxnRolledBack
	}
	prep, failure, err := c.preparePushes(ctx, tenant, t.items, t.label)
	switch {
	case err != nil:
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, err.Error()), TxnRefused
	case failure != "":
		return fail(failure)
	}
	groups := groupAcks(t.acks)
	req := pgwire.TxnRequest{Tenant: tenant, Writes: prep.Writes, Acks: make([]pgwire.TxnAckGroup, len(groups))}
	for k, g := range groups {
		items := make([]pgwire.AckItem, len(g.idx))
		for j, i := range g.idx {
			items[j] = pgwire.AckItem{TransactionID: t.acks[i].TransactionID, Status: string(t.acks[i].Status), Error: t.acks[i].Error}
		}
		req.Acks[k] = pgwire.TxnAckGroup{PartitionID: g.pid, Group: g.group, Lease: g.lease, Items: items}
	}
	res, err := c.cfg.DB.Transaction(ctx, req)
	if err != nil {
		var dup *pgwire.TxnDuplicateError
		var ack *pgwire.TxnAckError
		switch {
		case errors.As(err, &dup):
			return fail(duplicateItem(prep, dup, t.label))
		case errors.As(err, &ack):
			op := jsonapi.OperationLabel(t.ackOp[groups[ack.Group].idx[ack.Item]])
			if ack.Lease {
				return fail("ACK operation failed: Invalid or expired lease (" + op + ")")
			}
			return fail("ACK operation failed: Message not found (" + op + ": " + ack.Reason + ")")
		case pgwire.IsUnavailable(err):
			return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, err.Error()), TxnRefused
		case pgwire.IsOutcomeUnknown(err):
			return fail("the transaction's outcome is unknown: the connection to PostgreSQL was lost after it was sent, so it may have committed or not (" + err.Error() + ")")
		}
		return fail("the transaction was rolled back: " + err.Error())
	}
	c.committed(tenant, prep, res, t, groups)
	return jsonapi.StatusOK, jsonapi.AppendTxnAnswer(make([]byte, 0, 64+len(ops)*256), id, t.results(prep, res, groups)), TxnCommitted
}

// committed tells the others what a committed transaction wrote, before
// it is answered (a client pops right after commit()): the hot tail gets
// its segments as a committed bundle's, the pushed partitions are
// announced (hot-list, high-water marks, MESSAGE_AVAILABLE to peers), and
// the acknowledged partitions' cursors and released leases are noted as an
// ack's are.
func (c *Consumer) committed(tenant tenancy.TenantID, prep push.Prepared, res pgwire.TxnResult, t *txnCall, groups []ackGroup) {
	c.announcePushes(tenant, prep, res.Pushed)
	for k, g := range groups {
		r := res.Acked[k]
		for j, i := range g.idx {
			c.cfg.Observer.Acked(string(t.acks[i].Status), true, r.DLQ[j])
		}
		c.noteAcked(g.pid, g.group, r.Cursor)
		if r.Released {
			c.leaseEnded(tenant, r.Queue, r.Partition, g.group, false)
		}
	}
}

// announcePushes tells the others what the pushes of a committed
// transaction or requeue wrote, before it is answered: the hot tail gets
// their segments as a committed bundle's, and the partitions are announced
// (hot-list, high-water marks, the pop marks, MESSAGE_AVAILABLE to peers),
// so parked pops wake.
func (c *Consumer) announcePushes(tenant tenancy.TenantID, prep push.Prepared, res []segment.Result) {
	if len(prep.Writes) == 0 {
		return
	}
	c.cfg.Tail.Committed(prep.Writes, res)
	keys := make([]readside.Key, len(prep.Writes))
	for k, w := range prep.Writes {
		keys[k] = readside.Key{Tenant: tenant, Queue: w.Queue, Partition: w.Partition}
	}
	c.cfg.Reads.Announce(keys)
}

// label names push item i of the transaction in errors: its operation.
func (t *txnCall) label(i int) string { return jsonapi.OperationLabel(t.itemOp[i]) }

// preparePushes prepares the pushes of a transaction or a cycle as a
// push's are; name labels item i in errors. A failure is the answer's
// error (nothing runs); err means it was not attempted (503).
func (c *Consumer) preparePushes(ctx context.Context, tenant tenancy.TenantID, items []jsonapi.Item, name func(int) string) (push.Prepared, string, error) {
	if len(items) == 0 {
		return push.Prepared{}, "", nil
	}
	if c.cfg.Pushes == nil {
		return push.Prepared{}, "", errors.New("pushes in a transaction are not served here")
	}
	prep, err := c.cfg.Pushes.PrepareTxn(ctx, tenant, items)
	var rep *push.RepeatError
	var bad *push.ItemError
	switch {
	case errors.As(err, &rep):
		return prep, fmt.Sprintf("%s: duplicate transactionId %q in %s/%s (repeats %s)", name(rep.Index), rep.TransactionID, rep.Queue, rep.Partition, name(rep.First)), nil
	case errors.As(err, &bad):
		return prep, fmt.Sprintf("%s: %s", name(bad.Index), bad.Err), nil
	}
	return prep, "", err
}

// duplicateItem says which pushed item repeats a stored message.
func duplicateItem(prep push.Prepared, d *pgwire.TxnDuplicateError, name func(int) string) string {
	for i, it := range prep.Items {
		if it.Write == d.Write && it.Frame == d.Frame {
			w := prep.Writes[d.Write]
			return fmt.Sprintf("%s: duplicate transactionId %q in %s/%s (offset %d)", name(i), it.TransactionID, w.Queue, w.Partition, d.Offset)
		}
	}
	return fmt.Sprintf("duplicate transactionId in segment %d (offset %d)", d.Write, d.Offset)
}

// results are the answer's, one per operation, in request order.
func (t *txnCall) results(prep push.Prepared, res pgwire.TxnResult, groups []ackGroup) []jsonapi.TxnResult {
	out := make([]jsonapi.TxnResult, len(t.ops))
	for i, it := range prep.Items {
		w, r := &prep.Writes[it.Write], &res.Pushed[it.Write]
		out[t.itemOp[i]] = jsonapi.TxnResult{Push: true, TransactionID: it.TransactionID, MessageID: it.ID, PartitionID: r.PartitionID,
			Queue: w.Queue, Partition: w.Partition, Offset: r.BaseOffset + int64(it.Frame), CreatedAt: r.CreatedAt}
	}
	for k, g := range groups {
		for j, i := range g.idx {
			out[t.ackOp[i]] = jsonapi.TxnResult{TransactionID: t.acks[i].TransactionID, DLQ: res.Acked[k].DLQ[j]}
		}
	}
	return out
}
