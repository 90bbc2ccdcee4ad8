package pgwire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/segment"
)

// Queen's Streams SDK keeps each streaming query's registration and its
// per-partition state here (migration 0020, docs/streams.md). A cycle
// commits a processed batch of one source partition: state changes, sink
// pushes and the source acknowledgement in one transaction
// (functions/stream_cycle_v1.sql).

// StreamRegistration is a query to register for a tenant.
type StreamRegistration struct {
	Tenant     tenancy.TenantID
	ID         [16]byte // the id a new query gets
	Name       string
	Source     string
	Sink       string // "" when the query has none
	ConfigHash string
	Reset      bool
}

// StreamRegistered is what a registration did.
type StreamRegistered struct {
	ID         [16]byte // the query's id: ID when Fresh, else the stored one
	ConfigHash string   // the stored hash (the other one when Conflict)
	Fresh      bool     // the name was unknown
	Reset      bool     // the hash changed and the query's state was dropped
	Conflict   bool     // the hash differs and no reset was asked: nothing written
}

const streamRegisterSQL = `SELECT o_id, o_hash, o_fresh, o_reset, o_conflict FROM queen.stream_register_v1($1, $2, $3, $4, $5, $6, $7)`

// StreamRegister registers a streaming query, idempotent by name
// (functions/stream_register_v1.sql).
func (db *DB) StreamRegister(ctx context.Context, r StreamRegistration) (StreamRegistered, error) {
	var out StreamRegistered
	var id pgtype.UUID
	sink := pgtype.Text{String: r.Sink, Valid: r.Sink != ""}
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		return conn.QueryRow(ctx, streamRegisterSQL, tenantArg(r.Tenant), pgtype.UUID{Bytes: r.ID, Valid: true}, r.Name, r.Source, sink,
			r.ConfigHash, r.Reset).Scan(&id, &out.ConfigHash, &out.Fresh, &out.Reset, &out.Conflict)
	})
	if err != nil {
		return StreamRegistered{}, fmt.Errorf("pgwire: registering streaming query %q: %w", r.Name, err)
	}
	out.ID = id.Bytes
	return out, nil
}

// StreamStateQuery reads state rows of one (query, partition) of a
// tenant. Filters combine with AND.
type StreamStateQuery struct {
	Tenant      tenancy.TenantID
	Query       [16]byte
	PartitionID int64
	Keys        []string // nil or empty: every key
	Prefix      string   // "": any
	// RipeAtOrBefore, when set, keeps rows whose value.windowEnd is a
	// number at most this.
	RipeAtOrBefore *float64
}

// StreamStateRow is one state row.
type StreamStateRow struct {
	Key       string
	Value     json.RawMessage
	UpdatedAt time.Time
}

// ErrStreamQueryUnknown: no streaming query of the tenant has this id.
var ErrStreamQueryUnknown = errors.New("pgwire: no streaming query with this id")

// The rows are found within the (query, partition) range of the primary
// key, or of stream_state_ripe for a ripeness read; the prefix is a key
// range of the "C" collation. The query's tenant is checked in the same
// statement: a query of another tenant reads as unknown.
const streamStateSQL = `SELECT q.ok, s.key, s.value, s.updated_at
	FROM (SELECT true AS ok FROM queen.stream_queries WHERE id = $1 AND tenant = $2) q
	LEFT JOIN LATERAL (
		SELECT x.key, x.value, x.updated_at FROM queen.stream_state x
		WHERE x.query_id = $1 AND x.partition_id = $3
		  AND ($4::text[] IS NULL OR x.key = ANY ($4::text[]))
		  AND ($5::text = '' OR (x.key >= $5::text AND left(x.key, length($5::text)) = $5::text))
		  AND ($6::float8 IS NULL OR x.window_end <= $6::float8)
		ORDER BY x.key) s ON true`

// streamStateLockSQL takes, shared, the lock a cycle of the (query,
// partition) holds while it commits (stream_cycle_v1's first lock).
const streamStateLockSQL = `SELECT pg_advisory_xact_lock_shared(hashtext($1::uuid::text), hashtext($2::bigint::text))`

// StreamState reads state rows, ordered by key. It returns
// ErrStreamQueryUnknown when the tenant has no such query.
//
// A read waits for a cycle of its (query, partition) that is committing,
// and answers with the state that cycle leaves: reads and cycles of one
// (query, partition) take effect in the order they reach the database. So
// a read sent after a cycle (the SDK's processing loop reading just after
// its idle flush sent a cycle that closes a window) never finds what that
// cycle deletes and closes it again. The lock is shared, so reads do not
// wait for each other, and it is the only lock a read takes, so it closes
// no cycle of waits. The two statements go as one batch, one implicit
// transaction that holds the lock through the read; the read's snapshot
// is taken after the lock is granted (READ COMMITTED).
func (db *DB) StreamState(ctx context.Context, r StreamStateQuery) ([]StreamStateRow, error) {
	var keys []string
	if len(r.Keys) > 0 {
		keys = r.Keys
	}
	query := pgtype.UUID{Bytes: r.Query, Valid: true}
	var rows []StreamStateRow
	found := false
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		rows, found = rows[:0], false
		b := &pgx.Batch{}
		b.Queue(streamStateLockSQL, query, r.PartitionID)
		b.Queue(streamStateSQL, query, tenantArg(r.Tenant), r.PartitionID, keys, r.Prefix, r.RipeAtOrBefore)
		br := conn.SendBatch(ctx, b)
		if _, err := br.Exec(); err != nil {
			br.Close()
			return err
		}
		res, err := br.Query()
		if err != nil {
			br.Close()
			return err
		}
		for res.Next() {
			var key pgtype.Text
			var value []byte
			var at pgtype.Timestamptz
			if err := res.Scan(&found, &key, &value, &at); err != nil {
				res.Close()
				br.Close()
				return err
			}
			if key.Valid {
				rows = append(rows, StreamStateRow{Key: key.String, Value: value, UpdatedAt: at.Time})
			}
		}
		if err := res.Err(); err != nil {
			br.Close()
			return err
		}
		return br.Close()
	})
	if err != nil {
		return nil, fmt.Errorf("pgwire: reading streaming state: %w", err)
	}
	if !found {
		return nil, ErrStreamQueryUnknown
	}
	return rows, nil
}

// StreamOp is one state operation of a cycle: an upsert of Value, or a
// delete.
type StreamOp struct {
	Delete bool
	Key    string
	Value  json.RawMessage // the upsert's JSON value
}

// StreamAck is a cycle's source acknowledgement: one message of the
// cycle's partition (its transactionId), for Group, under Lease (nil: not
// checked). Status is completed, success or dlq.
type StreamAck struct {
	Group         string
	Lease         *[16]byte
	TransactionID string
	Status        string
	Error         string
}

// StreamCycleRequest is one cycle of a streaming query.
type StreamCycleRequest struct {
	Tenant      tenancy.TenantID
	Query       [16]byte
	PartitionID int64
	// Writes are the sink pushes, one segment per partition, as a
	// transaction's (TxnRequest.Writes).
	Writes []segment.Write
	Ack    *StreamAck // nil: no acknowledgement
	// Release: release the lease when the acknowledgement leaves some of
	// what it delivered unacknowledged.
	Release bool
	Ops     []StreamOp
}

// StreamCycleResult is what a committed cycle wrote.
type StreamCycleResult struct {
	Pushed []segment.Result // one per write
	// The acknowledgement's outcome (when there was one): a dead letter
	// was written, the lease was released, the cursor and the partition.
	DLQ                    bool
	Released               bool
	Cursor                 int64
	SourceQueue, Partition string
	Ops                    int // state operations applied
}

// StreamCycleError aborts a cycle: nothing was written. Duplicate and Ack
// carry the transaction wire's reasons (*TxnDuplicateError, *TxnAckError).
type StreamCycleError struct {
	Reason    string // what failed, in words
	Duplicate *TxnDuplicateError
	Ack       *TxnAckError
}

func (e *StreamCycleError) Error() string { return "pgwire: cycle rolled back: " + e.Reason }

const streamCycleSQL = `SELECT o_fail, o_fail_reason, o_dup_segs, o_dup_idx, o_dup_offs, o_pids, o_qids, o_wins, o_bases, o_ts,
	o_dlq, o_released, o_queue, o_name, o_cursor, o_ops
FROM queen.stream_cycle_v1($1, $2, $3, $4::text[], $5::text[], $6::int4[], $7::bytea[], $8::int8[], $9::bytea[],
	$10, $11, $12, $13, $14, $15, $16, $17::bool[], $18::text[], $19::text[]::jsonb[])`

// StreamCycle runs a cycle in one PostgreSQL transaction on a pooled
// connection of its own, never fused with other writes. Its errors are
// Transaction's, with a *StreamCycleError where it aborted.
func (db *DB) StreamCycle(ctx context.Context, req StreamCycleRequest) (StreamCycleResult, error) {
	n, w := len(req.Writes), newBundleArgs(req.Writes)
	var group, status, txid, errText pgtype.Text
	var lease pgtype.UUID
	var hash []byte
	if a := req.Ack; a != nil {
		group, status = pgtype.Text{String: a.Group, Valid: true}, pgtype.Text{String: a.Status, Valid: true}
		txid, errText = pgtype.Text{String: a.TransactionID, Valid: true}, pgtype.Text{String: a.Error, Valid: a.Error != ""}
		if a.Lease != nil {
			lease = pgtype.UUID{Bytes: *a.Lease, Valid: true}
		}
		h := segment.Hash(a.TransactionID)
		hash = h[:]
	}
	deletes, keys, values := make([]bool, len(req.Ops)), make([]string, len(req.Ops)), make([]pgtype.Text, len(req.Ops))
	for i, op := range req.Ops {
		deletes[i], keys[i] = op.Delete, op.Key
		values[i] = pgtype.Text{String: string(op.Value), Valid: !op.Delete}
	}
	var out struct {
		fail, reason      pgtype.Text
		dupSegs, dupIdx   []int32
		dupOffs           []int64
		pids, qids, bases []int64
		wins              []int32
		ts                pgtype.Timestamptz
		dlq, released     bool
		queue, name       pgtype.Text
		cursor            pgtype.Int8
		ops               int32
	}
	var raw error // the statement's own error, before withConn wraps it
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		raw = conn.QueryRow(ctx, streamCycleSQL, tenantArg(req.Tenant), pgtype.UUID{Bytes: req.Query, Valid: true}, req.PartitionID,
			w.queues, w.partitions, w.counts, w.hashes, w.verified, w.blobs,
			group, lease, hash, status, errText, txid, req.Release, deletes, keys, values).
			Scan(&out.fail, &out.reason, &out.dupSegs, &out.dupIdx, &out.dupOffs, &out.pids, &out.qids, &out.wins, &out.bases, &out.ts,
				&out.dlq, &out.released, &out.queue, &out.name, &out.cursor, &out.ops)
		return raw
	})
	if err != nil {
		return StreamCycleResult{}, writeCallError("cycle", raw, err)
	}
	switch out.fail.String {
	case "":
	case "query":
		return StreamCycleResult{}, &StreamCycleError{Reason: "no streaming query with this query_id"}
	case "partition":
		return StreamCycleResult{}, &StreamCycleError{Reason: "no partition with this partition_id"}
	case "duplicate":
		err := firstDuplicate(out.dupSegs, out.dupIdx, out.dupOffs)
		var dup *TxnDuplicateError
		if !errors.As(err, &dup) {
			return StreamCycleResult{}, err
		}
		return StreamCycleResult{}, &StreamCycleError{Reason: "a sink push repeats a stored transactionId", Duplicate: dup}
	case "ack", "lease":
		ack := &TxnAckError{Lease: out.fail.String == "lease", Reason: out.reason.String}
		return StreamCycleResult{}, &StreamCycleError{Reason: "the acknowledgement did not apply: " + ack.Reason, Ack: ack}
	default:
		return StreamCycleResult{}, fmt.Errorf("%w: cycle failed with %q", ErrBadResult, out.fail.String)
	}
	pushed, err := committedPushes("cycle", n, out.pids, out.qids, out.wins, out.bases, out.ts.Time)
	if err != nil {
		return StreamCycleResult{}, err
	}
	return StreamCycleResult{Pushed: pushed, DLQ: out.dlq, Released: out.released, Cursor: out.cursor.Int64,
		SourceQueue: out.queue.String, Partition: out.name.String, Ops: int(out.ops)}, nil
}

// StreamQueryStats is a registered streaming query of a source queue and
// the size of its state (the console's queue page).
type StreamQueryStats struct {
	ID                   [16]byte
	Name, Sink, Hash     string
	Partitions, Rows     int64     // source partitions with state; state rows
	Bytes                int64     // the state values' size, as stored
	UpdatedAt, LastCycle time.Time // registration; the newest state write (zero: none)
}

// The state is counted per query through its primary key's (query) prefix.
const streamQueriesOfSQL = `SELECT q.id, q.name, coalesce(q.sink_queue, ''), q.config_hash, q.updated_at,
		s.parts, s.n, s.bytes, s.last
	FROM queen.stream_queries q
	CROSS JOIN LATERAL (
		SELECT count(DISTINCT x.partition_id) AS parts, count(*) AS n, coalesce(sum(pg_column_size(x.value)), 0)::bigint AS bytes,
		       max(x.updated_at) AS last
		FROM queen.stream_state x WHERE x.query_id = q.id) s
	WHERE q.tenant = $1 AND q.source_queue = $2
	ORDER BY q.name`

// StreamQueriesOf lists the tenant's streaming queries whose source is
// queue, with their state's size.
func (db *DB) StreamQueriesOf(ctx context.Context, tenant tenancy.TenantID, queue string) ([]StreamQueryStats, error) {
	var out []StreamQueryStats
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		out = out[:0]
		rows, err := conn.Query(ctx, streamQueriesOfSQL, tenantArg(tenant), queue)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var s StreamQueryStats
			var id pgtype.UUID
			var last pgtype.Timestamptz
			if err := rows.Scan(&id, &s.Name, &s.Sink, &s.Hash, &s.UpdatedAt, &s.Partitions, &s.Rows, &s.Bytes, &last); err != nil {
				return err
			}
			s.ID, s.LastCycle = id.Bytes, last.Time
			out = append(out, s)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("pgwire: streaming queries of %q: %w", queue, err)
	}
	return out, nil
}
