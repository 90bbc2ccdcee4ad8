package pgwire

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/queenbridge/queenbridge/storage"
)

// MessagePartitions lists the tenant's partitions the filter selects, by
// id, each with its groups' cursor rows.
func (db *DB) MessagePartitions(ctx context.Context, tenant tenancy.TenantID, f storage.MessageFilter) ([]storage.MessagePartition, error) {
	var out []storage.MessagePartition
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		out = out[:0] // a retry runs this again (withConn)
		rows, err := conn.Query(ctx, partitionSQL+` WHERE q.tenant = $1 AND ($2 = '' OR q.name = $2) AND ($3 = '' OR p.name = $3)
			AND ($4 = '' OR q.namespace = $4) AND ($5 = '' OR q.task = $5) ORDER BY p.id`,
			pgtype.UUID{Bytes: tenant, Valid: true}, f.Queue, f.Partition, f.Namespace, f.Task)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (storage.MessagePartition, error) { return scanPartition(r) })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgwire: partitions for a message list: %w", err)
	}
	return out, nil
}

// newestSQL walks each range's segments newest first, one index probe per
// segment (offsets are dense, so the segment before base B ends at B - 1),
// from the one holding Hi down to Lo, until it has counted Need messages
// created in [$5, $6] or reached a segment created before $5 (createdAt
// grows with the offset: it is stamped under the partition's lock). Of
// what it walked it keeps the newest segments, over every range, until
// they hold $7 messages, and answers them with their payloads, their
// tombstoned offsets and their offsets with dead letters. Only those
// payloads are read; the walk reads index entries and rows without them.
var newestSQL = statement("admin_messages_newest")

// NewestMessages answers the messages of the ranges created in [from, to],
// not tombstoned, from the newest segments of all ranges until they hold
// need messages (each range walked until its Need): at least the newest
// need of them, fewer where tombstones left holes, in no particular order.
func (db *DB) NewestMessages(ctx context.Context, ranges []storage.OffsetRange, from, to time.Time, need int64) ([]storage.ListedMessage, error) {
	n := len(ranges)
	pids, los, his, needs := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	for i, r := range ranges {
		pids[i], los[i], his[i], needs[i] = r.PartitionID, r.Lo, r.Hi, r.Need
	}
	var out []storage.ListedMessage
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		out = out[:0] // a retry runs this again (withConn)
		rows, err := conn.Query(ctx, newestSQL, pids, los, his, needs, from, to, need)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var pid, lo, hi, base int64
			var at time.Time
			var blob []byte
			var gone, dead []int64
			if err := rows.Scan(&pid, &lo, &hi, &base, &at, &blob, &gone, &dead); err != nil {
				return err
			}
			frames, err := segment.UnpackAll(blob)
			if err != nil {
				return fmt.Errorf("partition %d: segment at %d: %w", pid, base, err)
			}
			for k, f := range frames {
				off := base + int64(k)
				if off <= lo || off > hi || contains(gone, off) {
					continue
				}
				out = append(out, storage.ListedMessage{PartitionID: pid, Message: Message{Offset: off, Frame: f, CreatedAt: at}, DeadLettered: contains(dead, off)})
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("pgwire: newest messages of %d partitions: %w", n, err)
	}
	return out, nil
}

// NewestDeadLettered answers the messages of the partitions that some
// group wrote to its dead letters, created in [from, to] and not
// tombstoned, the newest need of them (by offset: createdAt grows with it).
func (db *DB) NewestDeadLettered(ctx context.Context, pids []int64, from, to time.Time, need int64) ([]storage.ListedMessage, error) {
	var out []storage.ListedMessage
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		out = out[:0] // a retry runs this again (withConn)
		rows, err := conn.Query(ctx, `SELECT d.partition_id, d.message_offset, s.base_offset, s.created_at, s.payload
			FROM (SELECT DISTINCT x.partition_id, x.message_offset FROM queen.dead_letters x WHERE x.partition_id = ANY($1::int8[])) d
			CROSS JOIN LATERAL (SELECT y.base_offset, y.created_at, y.payload FROM queen.log_segments y
			                    WHERE y.partition_id = d.partition_id AND y.end_offset >= d.message_offset
			                    ORDER BY y.end_offset LIMIT 1) s
			WHERE s.base_offset <= d.message_offset AND s.created_at BETWEEN $2 AND $3
			  AND NOT EXISTS (SELECT 1 FROM queen.log_tombstones t WHERE t.partition_id = d.partition_id AND t.message_offset = d.message_offset)
			ORDER BY s.created_at DESC, d.partition_id, d.message_offset DESC LIMIT $4`, pids, from, to, need)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var pid, off, base int64
			var at time.Time
			var blob []byte
			if err := rows.Scan(&pid, &off, &base, &at, &blob); err != nil {
				return err
			}
			f, err := segment.Unpack(blob, int(off-base))
			if err != nil {
				return fmt.Errorf("partition %d: segment at %d: %w", pid, base, err)
			}
			out = append(out, storage.ListedMessage{PartitionID: pid, Message: Message{Offset: off, Frame: f, CreatedAt: at}, DeadLettered: true})
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("pgwire: newest dead-lettered messages of %d partitions: %w", len(pids), err)
	}
	return out, nil
}
