package pgwire

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// popTailSQL claims a delivery the bridge serves from its own memory (the
// hot tail, readside.Tail): one compare-and-set UPDATE of the cursor row
// with no segment read. It applies only when the cursor is where the
// bridge believes, no live lease holds the row, the queue neither delays
// nor windows its messages, and the first segment delivered is still stored
// (retention removes a partition's segments oldest first, so the rest are
// too); otherwise it answers no row and writes nothing, and the pop reads
// PostgreSQL (popKnownSQL). The row records what is delivered as the other
// pops do: range, count and hash entries.
//
// Parameters: partition id, tenant, group, lease (NULL with auto-ack),
// auto-ack, expected cursor, to, count, hash entries, first segment's end. Answer,
// one row when claimed: partition name, last offset, lease expiry, expired.
const popTailSQL = `/* queen:pop-tail */ WITH p AS (
    SELECT p.id, p.name, p.last_offset,
           queen.consumer_option_v1(q.other_options, 'leaseTime', 300) AS lease_s,
           queen.consumer_option_v1(q.other_options, 'delayedProcessing', 0) AS delay_s,
           queen.consumer_option_v1(q.other_options, 'windowBuffer', 0) AS window_s
    FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
    WHERE p.id = $1 AND q.tenant = $2
), cur AS (
    SELECT c.lease_id IS NOT NULL AS expired FROM queen.consumer_cursors c
    WHERE c.partition_id = $1 AND c.consumer_group = $3
), u AS (
    UPDATE queen.consumer_cursors c SET
        lease_id         = CASE WHEN $5 THEN NULL ELSE $4::uuid END,
        lease_expires_at = CASE WHEN $5 THEN NULL ELSE clock_timestamp() + make_interval(secs => p.lease_s) END,
        cursor_offset    = CASE WHEN $5 THEN $7::int8 ELSE c.cursor_offset END,
        delivered_to     = $7,
        delivered_count  = $8,
        acked_count      = CASE WHEN $5 THEN $8::int4 ELSE 0 END,
        retry_count      = CASE WHEN $5 THEN 0 ELSE c.retry_count END,
        delivered_hashes = $9,
        updated_at       = clock_timestamp()
    FROM p
    WHERE c.partition_id = $1 AND c.consumer_group = $3 AND c.cursor_offset = $6
      AND (c.lease_id IS NULL OR c.lease_expires_at <= clock_timestamp())
      AND p.delay_s = 0 AND p.window_s = 0
      AND EXISTS (SELECT 1 FROM queen.log_segments s WHERE s.partition_id = $1 AND s.end_offset = $10)
    RETURNING c.lease_expires_at
)
SELECT p.name, p.last_offset, u.lease_expires_at, coalesce(cur.expired, false)
FROM u CROSS JOIN p LEFT JOIN cur ON true`

// TailClaim is a delivery served from the bridge's memory, to be claimed.
type TailClaim struct {
	Cursor, To int64
	Count      int
	// Hashes are the delivered messages' hash entries, in offset order.
	Hashes []byte
	// FirstEnd is the end offset of the first segment delivered.
	FirstEnd int64
}

// PopTail claims a delivery the bridge serves from memory (popTailSQL).
// ok is false when it did not apply (nothing was written): the pop then
// reads PostgreSQL. The answer has no messages; the caller adds them.
func (db *DB) PopTail(ctx context.Context, req PopRequest, c TailClaim) (res PopResult, ok bool, err error) {
	var name pgtype.Text
	var last pgtype.Int8
	var expires pgtype.Timestamptz
	err = db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		return conn.QueryRow(ctx, popTailSQL, req.PartitionID, pgtype.UUID{Bytes: req.Tenant, Valid: true}, req.Group,
			pgtype.UUID{Bytes: req.Lease, Valid: !req.AutoAck}, req.AutoAck, c.Cursor, c.To, int32(c.Count), c.Hashes, c.FirstEnd).
			Scan(&name, &last, &expires, &res.Expired)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return res, false, nil
	}
	if err != nil {
		return res, false, fmt.Errorf("pgwire: pop partition id %d for %q from memory: %w", req.PartitionID, req.Group, err)
	}
	res.Status, res.PartitionID, res.Partition, res.Last = PopDelivered, req.PartitionID, name.String, last.Int64
	res.Cursor, res.To, res.LeaseExpires = c.Cursor, c.To, expires.Time
	return res, true, nil
}
