package pgwire

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/queenbridge/queenbridge/storage"
)

// Message is a stored message (storage.Message), named here for the
// statements that decode messages (reads, pops, dead letters, the message
// look-ups, the JetStream reads) and for the rooms that import pgwire.
type Message = storage.Message

// ReadMessages returns up to limit messages of a partition at offsets >=
// from, in offset order, and stops before the message that would take their
// payloads past maxBytes (but returns at least one). Offsets removed by
// retention and tombstoned offsets (migration 0012) are skipped; a
// partition that does not exist reads as empty.
func (db *DB) ReadMessages(ctx context.Context, tenant tenancy.TenantID, queue, partition string, from int64, limit int, maxBytes int64) ([]Message, error) {
	var out []Message
	var size int64 // payload bytes in out
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		// Tombstones can leave a page short: read on after it, as long as
		// the segments read were as many as asked for (more may follow).
		for at := from; ; {
			ask := limit - len(out)
			segs, full, next, err := readPage(ctx, conn, tenant, queue, partition, at, ask, maxBytes, &out, &size)
			if err != nil || full || len(out) >= limit || segs < ask {
				return err
			}
			at = next
		}
	})
	if err != nil {
		return nil, fmt.Errorf("pgwire: read %s/%s from %d: %w", queue, partition, from, err)
	}
	return out, nil
}

// readSQL reads up to $5 segments from offset $4 on, each with the
// tombstoned offsets it holds (an index probe per segment read, which finds
// nothing on a partition without tombstones).
const readSQL = `SELECT s.base_offset, s.created_at, s.payload,
		array(SELECT t.message_offset FROM queen.log_tombstones t
		      WHERE t.partition_id = s.partition_id AND t.message_offset BETWEEN greatest(s.base_offset, $4) AND s.end_offset
		      ORDER BY t.message_offset)
	FROM queen.log_segments s
	WHERE s.partition_id = (SELECT p.id FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
	                        WHERE q.tenant = $1 AND q.name = $2 AND p.name = $3)
	  AND s.end_offset >= $4
	ORDER BY s.end_offset LIMIT $5`

// readPage reads up to limit segments from offset from on, appending their
// messages to *out (up to limit of them, and no payload byte past maxBytes
// but the first message's). It answers how many segments it read, whether
// the byte bound stopped it, and the offset after the last segment read.
func readPage(ctx context.Context, conn *pgxpool.Conn, tenant tenancy.TenantID, queue, partition string, from int64, limit int, maxBytes int64,
	out *[]Message, size *int64) (segs int, full bool, next int64, err error) {
	rows, err := conn.Query(ctx, readSQL, pgtype.UUID{Bytes: tenant, Valid: true}, queue, partition, from, limit)
	if err != nil {
		return 0, false, from, err
	}
	defer rows.Close()
	want := len(*out) + limit
	next = from
	for !full && rows.Next() && len(*out) < want {
		var base int64
		var at time.Time
		var blob []byte
		var gone []int64
		if err := rows.Scan(&base, &at, &blob, &gone); err != nil {
			return segs, false, next, err
		}
		segs++
		frames, err := segment.UnpackAll(blob)
		if err != nil {
			return segs, false, next, fmt.Errorf("segment at %d: %w", base, err)
		}
		for k, f := range frames {
			off := base + int64(k)
			if off < from || len(*out) >= want {
				continue
			}
			if len(gone) > 0 && gone[0] == off {
				gone = gone[1:]
				continue
			}
			if len(*out) > 0 && *size+int64(len(f.Payload)) > maxBytes {
				full = true
				break
			}
			*size += int64(len(f.Payload))
			*out = append(*out, Message{Offset: off, Frame: f, CreatedAt: at})
		}
		next = base + int64(len(frames))
	}
	return segs, full, next, rows.Err()
}

// SegmentAt returns the stored segment of partition pid that covers offset
// off, or ErrSegmentGone. A rare path (duplicate resolution).
func (db *DB) SegmentAt(ctx context.Context, pid, off int64) (segment.Stored, error) {
	s := segment.Stored{PartitionID: pid}
	err := db.queryRow(ctx, func(r pgx.Row) error { return r.Scan(&s.BaseOffset, &s.Count, &s.CreatedAt, &s.Blob) },
		`SELECT base_offset, msg_count, created_at, payload FROM queen.log_segment_at_v1($1, $2)`, pid, off)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, ErrSegmentGone
	}
	if err != nil {
		return s, fmt.Errorf("pgwire: log_segment_at_v1(%d, %d): %w", pid, off, err)
	}
	return s, nil
}

// RetentionStep runs one bounded retention step (log_retention_step_v1).
func (db *DB) RetentionStep(ctx context.Context, maxPartitions, batch int) (storage.RetentionResult, error) {
	var r storage.RetentionResult
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		return conn.QueryRow(ctx, `SELECT o_partitions, o_segments, o_txns FROM queen.log_retention_step_v1($1, $2)`, maxPartitions, batch).
			Scan(&r.Partitions, &r.Segments, &r.Txns)
	})
	if err != nil {
		return r, fmt.Errorf("pgwire: retention step: %w", err)
	}
	return r, nil
}
