package pgwire

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/segment"
)

// TxnRequest is one transaction of Queen's transaction wire: its pushes,
// one segment per partition, and its acknowledgements, grouped per
// (partition, group, lease).
type TxnRequest struct {
	Tenant tenancy.TenantID
	// Writes are the pushed segments, one per partition (Queue, Partition,
	// Count, Hashes, Blob; Verified as NoProbe or 0; the tenant is Tenant).
	Writes []segment.Write
	// Acks are the acknowledgements, in the one lock order: ascending
	// partition id, then group, then lease. The caller sorts them.
	Acks []TxnAckGroup
}

// NoProbe is the Verified of a segment whose transactionIds were all
// minted by the bridge for this request: nothing stored can repeat them, so
// no probe of the window is needed.
const NoProbe = math.MaxInt64

// TxnAckGroup is the acknowledgements of one partition for one group under
// one lease (nil: not checked).
type TxnAckGroup struct {
	PartitionID int64
	Group       string
	Lease       *[16]byte
	Items       []AckItem
}

// TxnResult is what a committed transaction wrote.
type TxnResult struct {
	// Pushed has one result per write, in order: Queued, with its
	// partition, queue, window, base offset and the transaction's one
	// timestamp.
	Pushed []segment.Result
	// Acked has one result per group, in order; its DLQ per item.
	Acked []AckResult
}

// TxnDuplicateError aborts a transaction: a pushed frame's transactionId
// is stored in its partition inside the queue's window.
type TxnDuplicateError struct {
	Write, Frame int   // the segment (index of TxnRequest.Writes) and the frame in it
	Offset       int64 // the stored original's offset
}

func (e *TxnDuplicateError) Error() string {
	return fmt.Sprintf("pgwire: transaction: frame %d of segment %d is a duplicate of offset %d", e.Frame, e.Write, e.Offset)
}

// TxnAckError aborts a transaction: an acknowledgement did not apply.
type TxnAckError struct {
	Group, Item int // the group (index of TxnRequest.Acks) and the item in it
	// Lease: the group names a lease that is not the live one.
	Lease  bool
	Reason string // consumer_ack_v1's
}

func (e *TxnAckError) Error() string {
	return fmt.Sprintf("pgwire: transaction: acknowledgement %d of group %d: %s", e.Item, e.Group, e.Reason)
}

// ErrOutcomeUnknown: the connection was lost after the transaction was
// sent; it may have committed or not.
var ErrOutcomeUnknown = errors.New("pgwire: the transaction's outcome is unknown (connection lost)")

// IsOutcomeUnknown reports whether err is ErrOutcomeUnknown.
func IsOutcomeUnknown(err error) bool { return errors.Is(err, ErrOutcomeUnknown) }

// txnSQL runs the whole transaction (functions/txn_apply_v1.sql) as one
// statement: its implicit transaction is the transaction, one round trip.
const txnSQL = `SELECT o_fail, o_fail_item, o_fail_reason, o_dup_segs, o_dup_idx, o_dup_offs, o_pids, o_qids, o_wins, o_bases, o_ts,
	o_dlq, o_released, o_queues, o_names, o_cursors
FROM queen.txn_apply_v1($1, $2::text[], $3::text[], $4::int4[], $5::bytea[], $6::int8[], $7::bytea[],
	$8::int8[], $9::text[], $10::uuid[], $11::int4[], $12::bytea, $13::text[], $14::text[], $15::text[])`

// Transaction runs req in one PostgreSQL transaction on a pooled
// connection of its own, never fused with other writes: every push and
// every acknowledgement, or nothing. It returns
//
//   - the result, when it committed;
//   - a *TxnDuplicateError or *TxnAckError when it aborted (rolled back,
//     nothing written: no offset gap either);
//   - an error wrapping ErrUnavailable when it was not attempted (no
//     connection, or the statement was never sent);
//   - an error wrapping ErrOutcomeUnknown when the connection was lost
//     after it was sent;
//   - any other error when PostgreSQL refused or cancelled it (a statement
//     timeout included): rolled back.
func (db *DB) Transaction(ctx context.Context, req TxnRequest) (TxnResult, error) {
	n, w := len(req.Writes), newBundleArgs(req.Writes)
	m := len(req.Acks)
	pids, groups, leases, ends := make([]int64, m), make([]string, m), make([]pgtype.UUID, m), make([]int32, m)
	var ackHashes []byte
	var statuses, txids []string
	var errs []pgtype.Text
	for g, ag := range req.Acks {
		pids[g], groups[g] = ag.PartitionID, ag.Group
		if ag.Lease != nil {
			leases[g] = pgtype.UUID{Bytes: *ag.Lease, Valid: true}
		}
		for _, it := range ag.Items {
			h := segment.Hash(it.TransactionID)
			ackHashes = append(ackHashes, h[:]...)
			statuses = append(statuses, it.Status)
			txids = append(txids, it.TransactionID)
			errs = append(errs, pgtype.Text{String: it.Error, Valid: it.Error != ""})
		}
		ends[g] = int32(len(statuses))
	}
	if ackHashes == nil {
		ackHashes = []byte{}
	}
	var out struct {
		fail, reason            pgtype.Text
		item                    pgtype.Int4
		dupSegs, dupIdx         []int32
		dupOffs                 []int64
		pids, qids, bases, curs []int64
		wins                    []int32
		ts                      pgtype.Timestamptz
		dlq, released           []bool
		queues, names           []string
	}
	var raw error // the statement's own error, before withConn wraps it
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		raw = conn.QueryRow(ctx, txnSQL, tenantArg(req.Tenant), w.queues, w.partitions, w.counts, w.hashes, w.verified, w.blobs,
			pids, groups, leases, ends, ackHashes, statuses, errs, txids).
			Scan(&out.fail, &out.item, &out.reason, &out.dupSegs, &out.dupIdx, &out.dupOffs, &out.pids, &out.qids, &out.wins, &out.bases, &out.ts,
				&out.dlq, &out.released, &out.queues, &out.names, &out.curs)
		return raw
	})
	if err != nil {
		return TxnResult{}, writeCallError("transaction", raw, err)
	}
	switch out.fail.String {
	case "":
	case "duplicate":
		return TxnResult{}, firstDuplicate(out.dupSegs, out.dupIdx, out.dupOffs)
	case "ack", "lease":
		return TxnResult{}, ackFailure(req.Acks, int(out.item.Int32), out.fail.String == "lease", out.reason.String)
	default:
		return TxnResult{}, fmt.Errorf("%w: transaction failed with %q", ErrBadResult, out.fail.String)
	}
	if len(out.released) != m || len(out.queues) != m || len(out.names) != m || len(out.curs) != m || len(out.dlq) != len(statuses) {
		return TxnResult{}, fmt.Errorf("%w: transaction answered %d groups for %d", ErrBadResult, len(out.released), m)
	}
	pushed, err := committedPushes("transaction", n, out.pids, out.qids, out.wins, out.bases, out.ts.Time)
	if err != nil {
		return TxnResult{}, err
	}
	res := TxnResult{Pushed: pushed, Acked: make([]AckResult, m)}
	at := 0
	for g := range res.Acked {
		k := len(req.Acks[g].Items)
		res.Acked[g] = AckResult{Errs: make([]string, k), DLQ: out.dlq[at : at+k], Released: out.released[g],
			Queue: out.queues[g], Partition: out.names[g], Cursor: out.curs[g]}
		at += k
	}
	return res, nil
}

// firstDuplicate names the first duplicate frame (the lowest segment, then
// frame).
func firstDuplicate(segs, idx []int32, offs []int64) error {
	frames, err := duplicateFrames("transaction", segs, idx, offs)
	if err != nil {
		return err
	}
	best := frames[0]
	for _, f := range frames[1:] {
		if f.Write < best.Write || f.Write == best.Write && f.Frame < best.Frame {
			best = f
		}
	}
	return &TxnDuplicateError{Write: best.Write, Frame: best.Frame, Offset: best.Offset}
}

// The calls that write in a transaction of their own, on a connection of
// their own (Transaction, Requeue), share how their failures and their
// pushes' results are read.

// writeCallError classifies the failure of such a call: raw is the
// statement's own error, err what withConn returned.
func writeCallError(what string, raw, err error) error {
	var pgErr *pgconn.PgError
	switch {
	case raw == nil || errors.Is(err, ErrUnavailable): // no connection: nothing was sent
		return fmt.Errorf("pgwire: %s: %w", what, err)
	case errors.As(raw, &pgErr): // PostgreSQL refused it: its transaction rolled back
		return fmt.Errorf("pgwire: %s: %w", what, err)
	case pgconn.SafeToRetry(raw):
		return fmt.Errorf("pgwire: %s: %w: %v", what, ErrUnavailable, err)
	default:
		return fmt.Errorf("pgwire: %s: %w: %v", what, ErrOutcomeUnknown, err)
	}
}

// duplicateFrames reads the o_dup_* arrays log_push_multi_v2 fills when
// it aborts: every duplicate frame (segment ordinals are 1-based there).
func duplicateFrames(what string, segs, idx []int32, offs []int64) ([]DuplicateFrame, error) {
	if len(segs) == 0 || len(idx) != len(segs) || len(offs) != len(segs) {
		return nil, fmt.Errorf("%w: %s reported a duplicate without naming it", ErrBadResult, what)
	}
	frames := make([]DuplicateFrame, len(segs))
	for k := range segs {
		frames[k] = DuplicateFrame{Write: int(segs[k]) - 1, Frame: int(idx[k]), Offset: offs[k]}
	}
	return frames, nil
}

// committedPushes is the results of a committed call's n pushes from its
// per-segment arrays: each Queued, at the call's one timestamp.
func committedPushes(what string, n int, pids, qids []int64, wins []int32, bases []int64, ts time.Time) ([]segment.Result, error) {
	if len(pids) != n || len(qids) != n || len(wins) != n || len(bases) != n {
		return nil, fmt.Errorf("%w: %s answered %d segments for %d", ErrBadResult, what, len(pids), n)
	}
	res := make([]segment.Result, n)
	for i := range res {
		if bases[i] < 1 {
			return nil, fmt.Errorf("%w: %s wrote segment %d at %d", ErrBadResult, what, i, bases[i])
		}
		res[i] = segment.Result{Status: segment.Queued, PartitionID: pids[i], QueueID: qids[i], WindowSeconds: wins[i],
			BaseOffset: bases[i], CreatedAt: ts}
	}
	return res, nil
}

// ackFailure turns the failing item's ordinal (1-based, over every group's
// items) into its group and place.
func ackFailure(groups []TxnAckGroup, ord int, lease bool, reason string) error {
	k := ord - 1
	for g := range groups {
		if k < len(groups[g].Items) {
			return &TxnAckError{Group: g, Item: k, Lease: lease, Reason: reason}
		}
		k -= len(groups[g].Items)
	}
	return fmt.Errorf("%w: transaction names acknowledgement %d of fewer", ErrBadResult, ord)
}
