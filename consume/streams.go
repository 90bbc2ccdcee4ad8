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
)

// Queen's Streams SDK (docs/streams.md): the operators run in the client;
// this room keeps each query's registration and per-partition state and
// commits a processed batch as a cycle. A cycle is a transaction of
// Queen's transaction wire with state beside it (the sink pushes prepared
// by the push room, the source acknowledgement with the consumer API's
// rules, one pgwire call, the announcements after COMMIT), so it lives
// here beside ServeTransaction and shares its path.

// StreamStore is what the streams routes ask of the database; *pgwire.DB
// satisfies it.
type StreamStore interface {
	StreamRegister(ctx context.Context, r pgwire.StreamRegistration) (pgwire.StreamRegistered, error)
	StreamState(ctx context.Context, q pgwire.StreamStateQuery) ([]pgwire.StreamStateRow, error)
	StreamCycle(ctx context.Context, req pgwire.StreamCycleRequest) (pgwire.StreamCycleResult, error)
}

// streams is the store of the streams routes: Config.Streams, or Config.DB
// when it is one.
func (c *Consumer) streams() StreamStore {
	if c.cfg.Streams != nil {
		return c.cfg.Streams
	}
	s, _ := c.cfg.DB.(StreamStore)
	return s
}

// refuseStreams answers a streams call that cannot be served: 503 while
// the bridge stops or without a store; ok false when it may go on.
func (c *Consumer) refuseStreams(writes bool) (int, []byte, bool) {
	switch {
	case c.cfg.Stopping():
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, push.ErrStopping), true
	case writes && c.cfg.Maintenance():
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, "maintenance mode is on: cycles and registrations are not run while nothing may reach PostgreSQL; send it again once it ends"), true
	case c.streams() == nil:
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, "streaming queries are not served here"), true
	}
	return 0, nil, false
}

// dbFailure answers a database error of a streams call: 503 when it was
// not attempted, 500 otherwise.
func dbFailure(err error) (int, []byte) {
	if pgwire.IsUnavailable(err) {
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, err.Error())
	}
	return jsonapi.StatusInternalServerError, jsonapi.AppendError(nil, err.Error())
}

// ServeStreamQuery registers a streaming query (POST /streams/v1/queries):
// 200 when stored or known with the same config_hash (or reset), 409 when
// known with another config_hash and no reset.
func (c *Consumer) ServeStreamQuery(ctx context.Context, tenant tenancy.TenantID, q jsonapi.StreamQuery) (int, []byte) {
	if status, body, refused := c.refuseStreams(true); refused {
		return status, body
	}
	r, err := c.streams().StreamRegister(context.WithoutCancel(ctx), pgwire.StreamRegistration{Tenant: tenant, ID: uuid.Must(uuid.NewV7()),
		Name: q.Name, Source: q.Source, Sink: q.Sink, ConfigHash: q.ConfigHash, Reset: q.Reset})
	if err != nil {
		return dbFailure(err)
	}
	if r.Conflict {
		return jsonapi.StatusConflict, jsonapi.AppendStreamConflict(nil, r.ID, q.Name, r.ConfigHash, q.ConfigHash)
	}
	return jsonapi.StatusOK, jsonapi.AppendStreamRegistered(nil, jsonapi.StreamRegistered{ID: r.ID, Name: q.Name, ConfigHash: r.ConfigHash,
		Fresh: r.Fresh, Reset: r.Reset})
}

// ServeStreamState reads state rows of one (query, partition) (POST
// /streams/v1/state/get): 200 with the rows ordered by key, 404 when the
// tenant has no such query. A read of the ripe windows and a read of the
// whole state take turns with the cycles that follow them
// (streamturns.go).
func (c *Consumer) ServeStreamState(ctx context.Context, tenant tenancy.TenantID, g jsonapi.StreamStateGet) (int, []byte) {
	if status, body, refused := c.refuseStreams(false); refused {
		return status, body
	}
	rows, err := c.readState(ctx, tenant, g)
	var waited *turnError
	if errors.As(err, &waited) {
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, waited.Error())
	}
	if errors.Is(err, pgwire.ErrStreamQueryUnknown) {
		return jsonapi.StatusNotFound, jsonapi.AppendError(nil, fmt.Sprintf("no streaming query with query_id %s", uuid.UUID(g.QueryID)))
	}
	if err != nil {
		return dbFailure(err)
	}
	out := make([]jsonapi.StreamRow, len(rows))
	for i, r := range rows {
		out[i] = jsonapi.StreamRow{Key: r.Key, Value: r.Value, UpdatedAt: r.UpdatedAt}
	}
	return jsonapi.StatusOK, jsonapi.AppendStreamRows(nil, out)
}

// readState reads g's rows holding the turn of g's kind (streamturns.go):
// taken at once when free; when the other kind holds it, a read that finds
// rows waits for it and reads again.
func (c *Consumer) readState(ctx context.Context, tenant tenancy.TenantID, g jsonapi.StreamStateGet) ([]pgwire.StreamStateRow, error) {
	k, ripe := turnKey{tenant: tenant, query: g.QueryID, partition: g.PartitionID}, g.RipeAtOrBefore != nil
	read := func() ([]pgwire.StreamStateRow, error) {
		return c.streams().StreamState(ctx, pgwire.StreamStateQuery{Tenant: tenant, Query: g.QueryID, PartitionID: g.PartitionID,
			Keys: g.Keys, Prefix: g.Prefix, RipeAtOrBefore: g.RipeAtOrBefore})
	}
	turn, _ := c.turns.take(ctx, k, ripe, false)
	if turn == nil {
		rows, err := read()
		if err != nil || len(rows) == 0 {
			return rows, err
		}
		if turn, err = c.turns.take(ctx, k, ripe, true); err != nil {
			return nil, &turnError{err}
		}
	}
	rows, err := read()
	if err != nil || len(rows) == 0 {
		c.turns.leave(k, turn)
	}
	return rows, err
}

// ServeStreamCycle commits one cycle (POST /streams/v1/cycle): 200 with
// success true when its state operations, sink pushes and source
// acknowledgement committed together, 200 with success false when it was
// rolled back (nothing written: the source messages come back by lease or
// retry), 503 when it was not attempted.
func (c *Consumer) ServeStreamCycle(ctx context.Context, tenant tenancy.TenantID, cy jsonapi.StreamCycle) (int, []byte) {
	// Whatever its outcome, the reads that waited for this cycle may see
	// what it left (streamturns.go).
	defer c.turns.cycled(turnKey{tenant: tenant, query: cy.QueryID, partition: cy.PartitionID})
	if status, body, refused := c.refuseStreams(true); refused {
		c.cfg.Observer.Transaction(TxnRefused)
		return status, body
	}
	// As a transaction, a cycle once sent runs to its end.
	status, body, outcome := c.cycle(context.WithoutCancel(ctx), tenant, cy)
	c.cfg.Observer.Transaction(outcome)
	return status, body
}

func (c *Consumer) cycle(ctx context.Context, tenant tenancy.TenantID, cy jsonapi.StreamCycle) (int, []byte, string) {
	fail := func(msg string) (int, []byte, string) {
		return jsonapi.StatusOK, jsonapi.AppendStreamCycleFailure(nil, cy.QueryID, cy.PartitionID, msg), TxnRolledBack
	}
	prep, failure, err := c.preparePushes(ctx, tenant, cy.Items, pushItemLabel)
	switch {
	case err != nil:
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, err.Error()), TxnRefused
	case failure != "":
		return fail(failure)
	}
	req := pgwire.StreamCycleRequest{Tenant: tenant, Query: cy.QueryID, PartitionID: cy.PartitionID, Writes: prep.Writes, Release: cy.Release,
		Ops: make([]pgwire.StreamOp, len(cy.Ops))}
	for i, op := range cy.Ops {
		req.Ops[i] = pgwire.StreamOp{Delete: op.Delete, Key: op.Key, Value: op.Value}
	}
	if a := cy.Ack; a != nil {
		req.Ack = &pgwire.StreamAck{Group: cy.Group, Lease: a.Lease, TransactionID: a.TransactionID, Status: a.Status, Error: a.Error}
	}
	res, err := c.streams().StreamCycle(ctx, req)
	if err != nil {
		var abort *pgwire.StreamCycleError
		switch {
		case errors.As(err, &abort) && abort.Duplicate != nil:
			return fail(duplicateItem(prep, abort.Duplicate, pushItemLabel))
		case errors.As(err, &abort) && abort.Ack != nil && abort.Ack.Lease:
			return fail("ACK operation failed: Invalid or expired lease")
		case errors.As(err, &abort) && abort.Ack != nil:
			return fail("ACK operation failed: Message not found (" + abort.Ack.Reason + ")")
		case errors.As(err, &abort):
			return fail(abort.Reason)
		case pgwire.IsUnavailable(err):
			return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, err.Error()), TxnRefused
		case pgwire.IsOutcomeUnknown(err):
			return fail("the cycle's outcome is unknown: the connection to PostgreSQL was lost after it was sent, so it may have committed or not (" + err.Error() + ")")
		}
		return fail("the cycle was rolled back: " + err.Error())
	}
	c.announcePushes(tenant, prep, res.Pushed)
	if cy.Ack != nil {
		c.cfg.Observer.Acked(cy.Ack.Status, true, res.DLQ)
		c.noteAcked(cy.PartitionID, cy.Group, res.Cursor)
		if res.Released {
			c.cfg.Marks.Released(tenant, res.SourceQueue, res.Partition, cy.Group, false)
		}
	}
	a := &jsonapi.StreamCycleAnswer{QueryID: cy.QueryID, PartitionID: cy.PartitionID, Queue: res.SourceQueue, Ops: res.Ops, Ack: cy.Ack,
		Released: res.Released, DLQ: res.DLQ, Items: make([]jsonapi.Item, len(prep.Items)), TxIDs: make([]string, len(prep.Items)),
		Pushes: make([]jsonapi.Result, len(prep.Items))}
	for i, it := range prep.Items {
		w, r := &prep.Writes[it.Write], &res.Pushed[it.Write]
		a.Items[i], a.TxIDs[i] = cy.Items[i], it.TransactionID
		a.Items[i].Queue, a.Items[i].Partition = w.Queue, w.Partition
		a.Pushes[i] = jsonapi.Result{Status: jsonapi.StatusQueued, MessageID: it.ID, HasID: true, Offset: r.BaseOffset + int64(it.Frame),
			CreatedAt: r.CreatedAt, PartitionID: r.PartitionID}
	}
	return jsonapi.StatusOK, jsonapi.AppendStreamCycle(nil, a), TxnCommitted
}

// pushItemLabel names a cycle's push item i in errors.
func pushItemLabel(i int) string { return fmt.Sprintf("push_items[%d]", i) }
