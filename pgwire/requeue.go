package pgwire

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/segment"
)

// Dead letters sent again (POST /api/v1/dlq/requeue, docs/console.md):
// the dead letters to requeue are read with their messages, and the new
// pushes and the removal of the dead-letter entries are written in one
// PostgreSQL transaction (functions/dlq_requeue_v1.sql): the pushes as a
// transaction without acknowledgements writes them (txn_apply_v1), then
// the removal.

// RequeueSelect names the dead letters to requeue: a tenant's queue, one
// group's or every group's ("" Group), one message's (PartitionID and
// TransactionID) or all, at most Limit of them.
type RequeueSelect struct {
	Tenant        tenancy.TenantID
	Queue, Group  string
	PartitionID   int64 // 0: every partition
	TransactionID string
	Limit         int
}

// requeueSelectSQL picks the oldest dead letters (by id) of queue $1 whose
// message is still stored and not deleted, partition by partition: one
// primary-key probe per partition for its first stored segment (what
// retention removed), its dead letters by their index on (partition,
// group, offset) (the subquery is kept apart, OFFSET 0, so that it stays a
// probe per partition rather than a read of every dead letter). Only then,
// for the Limit picked, the segments holding their messages are read.
const requeueSelectSQL = `WITH picked AS MATERIALIZED (
	SELECT d.id, d.transaction_id, d.partition_id, p.name AS pname, d.consumer_group, coalesce(d.error_message, '') AS err,
	       d.retry_count, d.message_offset, d.failed_at
	FROM queen.log_partitions p
	CROSS JOIN LATERAL (SELECT coalesce((SELECT s.base_offset FROM queen.log_segments s
	                                     WHERE s.partition_id = p.id ORDER BY s.end_offset LIMIT 1), p.last_offset + 1) AS first) f
	CROSS JOIN LATERAL (SELECT d.* FROM queen.dead_letters d
	                    WHERE d.partition_id = p.id AND ($2 = '' OR d.consumer_group = $2) AND d.message_offset >= f.first
	                      AND ($3 = 0 OR (d.partition_id = $3 AND d.transaction_id = $4)) AND ` + notTombstoned + `
	                    OFFSET 0) d
	WHERE p.queue_id = $1
	ORDER BY d.id LIMIT $5)
SELECT x.id, x.transaction_id, x.partition_id, x.pname, x.consumer_group, x.err, x.retry_count, x.message_offset, x.failed_at,
       s.base_offset, s.created_at, s.payload
FROM picked x
LEFT JOIN LATERAL (SELECT y.base_offset, y.created_at, y.payload FROM queen.log_segments y
                   WHERE y.partition_id = x.partition_id AND y.end_offset >= x.message_offset
                   ORDER BY y.end_offset LIMIT 1) s ON s.base_offset <= x.message_offset
ORDER BY x.id`

// RequeueCandidates reads the dead letters sel names, oldest first, with
// their messages (Found false: retention removed it meanwhile), at most
// sel.Limit of them; more says there are others. found is false when the
// tenant has no such queue.
func (db *DB) RequeueCandidates(ctx context.Context, sel RequeueSelect) (dls []DeadLetter, more, found bool, err error) {
	err = db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		dls, found = dls[:0], false
		var qid int64
		if err := conn.QueryRow(ctx, `SELECT q.id FROM queen.queues q WHERE q.tenant = $1 AND q.name = $2`, tenantArg(sel.Tenant), sel.Queue).Scan(&qid); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		}
		found = true
		rows, err := conn.Query(ctx, requeueSelectSQL, qid, sel.Group, sel.PartitionID, sel.TransactionID, sel.Limit+1)
		if err != nil {
			return err
		}
		dls, err = scanDeadLetters(rows, sel.Queue, dls)
		return err
	})
	if err != nil {
		return nil, false, false, fmt.Errorf("pgwire: dead letters of %s to requeue: %w", sel.Queue, err)
	}
	if len(dls) > sel.Limit {
		dls, more = dls[:sel.Limit], true
	}
	return dls, more, found, nil
}

// RequeueRequest is the pushes of requeued dead letters (one segment per
// partition, Verified 0, the tenant is Tenant) and the dead-letter entries
// to remove with them (DeadLetter.ID, distinct).
type RequeueRequest struct {
	Tenant      tenancy.TenantID
	Writes      []segment.Write
	DeadLetters []int64
}

// DuplicateFrame is a pushed frame whose transactionId is stored in its
// partition inside the queue's window: the segment (index of the
// request's Writes), the frame in it, and the stored original's offset.
type DuplicateFrame struct {
	Write, Frame int
	Offset       int64
}

// RequeueDuplicateError aborts a requeue: these frames are duplicates.
type RequeueDuplicateError struct{ Frames []DuplicateFrame }

func (e *RequeueDuplicateError) Error() string {
	return fmt.Sprintf("pgwire: requeue: %d frames are duplicates (the first of offset %d)", len(e.Frames), e.Frames[0].Offset)
}

// ErrRequeueGone aborts a requeue: a dead letter it was to remove is gone
// (requeued, deleted or its queue deleted meanwhile).
var ErrRequeueGone = errors.New("pgwire: requeue: a dead letter is gone")

const requeueSQL = `SELECT o_fail, o_dup_segs, o_dup_idx, o_dup_offs, o_pids, o_qids, o_wins, o_bases, o_ts
FROM queen.dlq_requeue_v1($1, $2::text[], $3::text[], $4::int4[], $5::bytea[], $6::int8[], $7::bytea[], $8::int8[])`

// Requeue writes req in one PostgreSQL transaction on a pooled connection
// of its own, never fused with other writes: every push and the removal
// of every dead letter, or nothing. It returns the pushes' results, in
// order, when it committed; a *RequeueDuplicateError or ErrRequeueGone
// when it aborted (nothing written); otherwise errors as Transaction's
// (ErrUnavailable: not attempted; ErrOutcomeUnknown: the connection was
// lost after it was sent; any other: rolled back).
func (db *DB) Requeue(ctx context.Context, req RequeueRequest) ([]segment.Result, error) {
	n, w := len(req.Writes), newBundleArgs(req.Writes)
	dead := req.DeadLetters
	if dead == nil {
		dead = []int64{}
	}
	var out struct {
		fail            pgtype.Text
		dupSegs, dupIdx []int32
		dupOffs         []int64
		pids, qids, bs  []int64
		wins            []int32
		ts              pgtype.Timestamptz
	}
	var raw error
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		raw = conn.QueryRow(ctx, requeueSQL, tenantArg(req.Tenant), w.queues, w.partitions, w.counts, w.hashes, w.verified, w.blobs, dead).
			Scan(&out.fail, &out.dupSegs, &out.dupIdx, &out.dupOffs, &out.pids, &out.qids, &out.wins, &out.bs, &out.ts)
		return raw
	})
	if err != nil {
		return nil, writeCallError("requeue", raw, err)
	}
	switch out.fail.String {
	case "":
	case "duplicate":
		frames, err := duplicateFrames("requeue", out.dupSegs, out.dupIdx, out.dupOffs)
		if err != nil {
			return nil, err
		}
		return nil, &RequeueDuplicateError{Frames: frames}
	case "gone":
		return nil, ErrRequeueGone
	default:
		return nil, fmt.Errorf("%w: requeue failed with %q", ErrBadResult, out.fail.String)
	}
	return committedPushes("requeue", n, out.pids, out.qids, out.wins, out.bs, out.ts.Time)
}
