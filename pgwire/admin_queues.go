package pgwire

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// The counts of Queen's resource and status routes (docs/admin.md, "The counts"), read from
// what the bridge keeps for each partition, never from a scan of its
// segments: the high-water mark (log_partitions.last_offset), the first
// and the last stored segment and the first one after the cursor (one
// index probe each, by the segments' primary key), the consumer rows and
// the dead letters (their indexes by partition).
//
// Per partition, with gone the highest offset no longer stored (retention
// removes segments oldest first) and the reference cursor the
// __QUEUE_MODE__ group's, else the lowest named group's, else 0:
//
//	total      = last_offset - gone
//	after      = last_offset - greatest(cursor, gone)   stored after the cursor
//	processing = delivered under the reference row's live lease, after the cursor
//	pending    = after - processing
//	completed  = total - after
//	deadLetter = dead-letter entries of the partition, every group
//
// Tombstoned messages (queen.log_tombstones) are still counted: the
// counts are (opt) in the contract, and subtracting them would need a read
// per partition of a table this file does not own.

// partitionFrom is the FROM clause of one partition p and what the counts
// read for it; partitionCols are its counts, in the order scanPartition
// reads them.
var partitionFrom = statement("admin_queues_partition_from")

const partitionCols = `p.last_offset - g.gone, a.after - w.processing, w.processing, p.last_offset - g.gone - a.after, dl.n,
	lc.leases, lc.batch, lc.acked, fs.created_at, ls.created_at, pa.created_at`

// Counts are a partition's or a queue's message counts.
type Counts struct {
	Total, Pending, Processing, Completed, DeadLetter int64
}

// Leases are the live leases of a partition or a queue: how many, and what
// they delivered and had acknowledged.
type Leases struct {
	Active, Delivered, Acked int64
}

// PartitionStat is one partition and its counts.
type PartitionStat struct {
	ID     int64
	Name   string
	Last   int64 // the high-water mark: the last offset written
	Counts Counts
	Leases Leases
	// Oldest and Newest are when the first and the last stored message
	// were written; OldestPending when the first after the reference
	// cursor was. Zero: none.
	Oldest, Newest, OldestPending time.Time
	LastWrite                     time.Time // the partition's last write, to the second
}

// QueueInfo is a queue's row: its names and options, no counts.
type QueueInfo struct {
	ID                    int64
	Name, Namespace, Task string
	CreatedAt             time.Time
	// Options are the options kept as sent (Queen's leaseTime,
	// retryLimit, ...), the ones this service acts on included.
	Options map[string]json.RawMessage
}

// queueInfoCols are QueueInfo's columns of queen.queues q, in its order.
const queueInfoCols = `q.id, q.name, q.namespace, q.task, q.created_at, q.other_options || jsonb_build_object(
		'encryptionEnabled', q.encryption_enabled, 'dedupWindowSeconds', q.dedup_window_seconds, 'retentionSeconds', q.retention_seconds)`

// scanQueueInfo reads queueInfoCols from row and then into rest.
func scanQueueInfo(row pgx.Row, q *QueueInfo, rest ...any) error {
	var opts []byte
	if err := row.Scan(append([]any{&q.ID, &q.Name, &q.Namespace, &q.Task, &q.CreatedAt, &opts}, rest...)...); err != nil {
		return err
	}
	if err := json.Unmarshal(opts, &q.Options); err != nil {
		return fmt.Errorf("queue %q: options: %w", q.Name, err)
	}
	return nil
}

// QueueStat is one queue and its partitions' counts summed.
type QueueStat struct {
	QueueInfo
	Partitions int64
	Counts     Counts
	Leases     Leases
	// LeasedPartitions and DeadPartitions count the partitions with a live
	// lease and with dead letters.
	LeasedPartitions, DeadPartitions int64
}

// QueueFilter narrows QueueStats; the zero value is every queue.
type QueueFilter struct {
	Name            string // one queue ("": any)
	Namespace, Task string // ("": any)
	Limit, Offset   int    // Limit 0: no limit
}

func tenantArg(t tenancy.TenantID) pgtype.UUID { return pgtype.UUID{Bytes: t, Valid: true} }

var queueStatsSQL = `SELECT ` + queueInfoCols + `,
		s.parts, s.total, s.pending, s.processing, s.completed, s.dead, s.leases, s.batch, s.acked, s.leased, s.deadparts
	FROM queen.queues q
	CROSS JOIN LATERAL (
		SELECT count(*) AS parts, coalesce(sum(p.last_offset - g.gone), 0)::bigint AS total,
		       coalesce(sum(a.after - w.processing), 0)::bigint AS pending, coalesce(sum(w.processing), 0)::bigint AS processing,
		       coalesce(sum(p.last_offset - g.gone - a.after), 0)::bigint AS completed, coalesce(sum(dl.n), 0)::bigint AS dead,
		       coalesce(sum(lc.leases), 0)::bigint AS leases, coalesce(sum(lc.batch), 0)::bigint AS batch, coalesce(sum(lc.acked), 0)::bigint AS acked,
		       count(*) FILTER (WHERE lc.leases > 0) AS leased, count(*) FILTER (WHERE dl.n > 0) AS deadparts
		FROM ` + partitionFrom + `
		WHERE p.queue_id = q.id) s
	WHERE q.tenant = $1 AND ($2 = '' OR q.name = $2) AND ($3 = '' OR q.namespace = $3) AND ($4 = '' OR q.task = $4)
	ORDER BY q.created_at DESC, q.id DESC
	LIMIT $5 OFFSET $6`

// QueueStats lists a tenant's queues, newest first, with their counts.
func (db *DB) QueueStats(ctx context.Context, tenant tenancy.TenantID, f QueueFilter) ([]QueueStat, error) {
	var out []QueueStat
	limit := int64(f.Limit)
	if limit <= 0 {
		limit = 1<<63 - 1
	}
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		out = out[:0] // a retry runs this again (withConn)
		rows, err := conn.Query(ctx, queueStatsSQL, tenantArg(tenant), f.Name, f.Namespace, f.Task, limit, max(f.Offset, 0))
		if err != nil {
			return err
		}
		out, err = pgx.AppendRows(out, rows, func(r pgx.CollectableRow) (s QueueStat, err error) {
			return s, scanQueueInfo(r, &s.QueueInfo, &s.Partitions,
				&s.Counts.Total, &s.Counts.Pending, &s.Counts.Processing, &s.Counts.Completed, &s.Counts.DeadLetter,
				&s.Leases.Active, &s.Leases.Delivered, &s.Leases.Acked, &s.LeasedPartitions, &s.DeadPartitions)
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgwire: queue counts: %w", err)
	}
	return out, nil
}

var partitionStatsSQL = `SELECT p.id, p.name, p.last_offset, p.last_write_at, ` + partitionCols + `
	FROM ` + partitionFrom + `
	WHERE p.queue_id = $1`

// PartitionStats is one of a tenant's queues (its row, no counts) and its
// partitions, ascending id, with their counts; found is false when the
// tenant has no such queue. The queue's totals are the partitions' sums:
// they are not counted a second time.
func (db *DB) PartitionStats(ctx context.Context, tenant tenancy.TenantID, queue string) (q QueueInfo, parts []PartitionStat, found bool, err error) {
	err = db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		parts, found = parts[:0], false // a retry runs this again (withConn)
		if err := scanQueueInfo(conn.QueryRow(ctx, `SELECT `+queueInfoCols+` FROM queen.queues q WHERE q.tenant = $1 AND q.name = $2`,
			tenantArg(tenant), queue), &q); err != nil {
			if err == pgx.ErrNoRows {
				return nil
			}
			return err
		}
		found = true
		rows, err := conn.Query(ctx, partitionStatsSQL, q.ID)
		if err != nil {
			return err
		}
		parts, err = pgx.AppendRows(parts, rows, func(r pgx.CollectableRow) (s PartitionStat, err error) {
			var oldest, newest, pending pgtype.Timestamptz
			err = r.Scan(&s.ID, &s.Name, &s.Last, &s.LastWrite, &s.Counts.Total, &s.Counts.Pending, &s.Counts.Processing,
				&s.Counts.Completed, &s.Counts.DeadLetter, &s.Leases.Active, &s.Leases.Delivered, &s.Leases.Acked,
				&oldest, &newest, &pending)
			s.Oldest, s.Newest, s.OldestPending = oldest.Time, newest.Time, pending.Time
			return s, err
		})
		// Sorted here: ORDER BY p.id would have the planner walk every
		// partition by its primary key instead of the queue's by its index.
		slices.SortFunc(parts, func(a, b PartitionStat) int { return cmp.Compare(a.ID, b.ID) })
		return err
	})
	if err != nil {
		return QueueInfo{}, nil, false, fmt.Errorf("pgwire: partition counts of %q: %w", queue, err)
	}
	return q, parts, found, nil
}

// Lag is how far behind its reference cursor a tenant's partitions with
// messages after it are: in messages, and in seconds since the first of
// them was written.
type Lag struct {
	Partitions                int64
	OffsetAvg, OffsetMedian   float64
	OffsetMin, OffsetMax      int64
	SecondsAvg, SecondsMedian float64
	SecondsMin, SecondsMax    float64
}

var tenantLagSQL = `SELECT count(*), coalesce(avg(x.lag), 0)::float8, coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY x.lag), 0)::float8,
		coalesce(min(x.lag), 0)::bigint, coalesce(max(x.lag), 0)::bigint,
		coalesce(avg(x.secs), 0)::float8, coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY x.secs), 0)::float8,
		coalesce(min(x.secs), 0)::float8, coalesce(max(x.secs), 0)::float8
	FROM queen.queues q
	CROSS JOIN LATERAL (SELECT a.after AS lag, greatest(extract(epoch FROM now() - pa.created_at), 0)::float8 AS secs
	                    FROM ` + partitionFrom + `
	                    WHERE p.queue_id = q.id AND a.after > 0
	                    OFFSET 0) x -- not flattened: one queue's partitions at a time, by its index
	WHERE q.tenant = $1`

// TenantLag reads the lag of a tenant's partitions (the overview's).
func (db *DB) TenantLag(ctx context.Context, tenant tenancy.TenantID) (Lag, error) {
	var l Lag
	err := db.queryRow(ctx, func(r pgx.Row) error {
		return r.Scan(&l.Partitions, &l.OffsetAvg, &l.OffsetMedian, &l.OffsetMin, &l.OffsetMax,
			&l.SecondsAvg, &l.SecondsMedian, &l.SecondsMin, &l.SecondsMax)
	}, tenantLagSQL, tenantArg(tenant))
	if err != nil {
		return l, fmt.Errorf("pgwire: lag: %w", err)
	}
	return l, nil
}

// DeadLetterError is one error text of the dead letters and how many
// carry it.
type DeadLetterError struct {
	Error string
	Count int64
}

// TopDeadLetterErrors lists the most frequent error texts of the dead
// letters of a tenant's queues that f selects (its Limit and Offset
// aside), at most limit.
func (db *DB) TopDeadLetterErrors(ctx context.Context, tenant tenancy.TenantID, f QueueFilter, limit int) ([]DeadLetterError, error) {
	var out []DeadLetterError
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		out = out[:0] // a retry runs this again (withConn)
		rows, err := conn.Query(ctx, `SELECT coalesce(d.error_message, ''), count(*) FROM queen.queues q
			JOIN queen.dead_letters d ON d.queue_id = q.id
			WHERE q.tenant = $1 AND ($2 = '' OR q.name = $2) AND ($3 = '' OR q.namespace = $3) AND ($4 = '' OR q.task = $4)
			GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT $5`, tenantArg(tenant), f.Name, f.Namespace, f.Task, limit)
		if err != nil {
			return err
		}
		out, err = pgx.AppendRows(out, rows, pgx.RowToStructByPos[DeadLetterError])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgwire: dead-letter errors: %w", err)
	}
	return out, nil
}
