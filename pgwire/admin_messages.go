package pgwire

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/queenbridge/queenbridge/storage"
)

// The admin routes' reads and the tombstone (docs/admin-messages.md): one message by
// its transactionId, its deletion, and the partitions a message list walks
// (admin_messages_list.go). Each answers stored facts; what they mean (a
// message's status) is the admin room's.

// partitionSQL reads a tenant's partition by id, with its queue and its
// groups' cursor rows.
var partitionSQL = statement("admin_messages_partition")

func scanPartition(rows pgx.Row) (storage.MessagePartition, error) {
	var m storage.MessagePartition
	var other []byte
	var names []string
	var cursors, tos []int64
	var expires []pgtype.Timestamptz
	if err := rows.Scan(&m.ID, &m.Partition, &m.Queue, &m.Namespace, &m.Task, &m.Encrypted, &other, &m.Last,
		&names, &cursors, &tos, &expires, &m.Tombstones, &m.DeadLetterCount); err != nil {
		return m, err
	}
	if len(other) > 0 {
		if err := json.Unmarshal(other, &m.Other); err != nil {
			return m, fmt.Errorf("queue %s: other options: %w", m.Queue, err)
		}
	}
	if len(cursors) != len(names) || len(tos) != len(names) || len(expires) != len(names) {
		return m, fmt.Errorf("%w: partition %d: misaligned cursor rows", ErrBadResult, m.ID)
	}
	for i, n := range names {
		m.Groups = append(m.Groups, storage.GroupState{Group: n, Cursor: cursors[i], DeliveredTo: tos[i], LeaseExpires: expires[i].Time})
	}
	return m, nil
}

// FindMessage finds the message with transactionId txid in partition pid of
// the tenant: the newest stored, not tombstoned, of that id (an id repeated
// after its deduplication window is stored again). It is found by the
// transactionId's hash in the hash blobs kept with each segment (or in
// log_txns, for segments written before migration 0006): every blob of
// the partition is searched, so it costs a read of the partition's hashes,
// 16 bytes a message. found is false for an unknown partition (or another
// tenant's), and for a message unknown, removed by retention or tombstoned.
func (db *DB) FindMessage(ctx context.Context, tenant tenancy.TenantID, pid int64, txid string) (out storage.FoundMessage, found bool, err error) {
	err = db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		rows, err := conn.Query(ctx, partitionSQL+` WHERE p.id = $1 AND q.tenant = $2`, pid, pgtype.UUID{Bytes: tenant, Valid: true})
		if err != nil {
			return err
		}
		ok := rows.Next()
		if ok {
			out.Partition, err = scanPartition(rows)
		}
		rows.Close()
		if err != nil || !ok {
			return firstErr(err, rows.Err())
		}
		msgs, err := findByHash(ctx, conn, pid, txid, true)
		if err != nil || len(msgs) == 0 {
			return err
		}
		out.Message, found = msgs[0], true
		dl, err := conn.Query(ctx, `SELECT d.consumer_group, coalesce(d.error_message, ''), d.retry_count, d.failed_at
			FROM queen.dead_letters d WHERE d.partition_id = $1 AND d.message_offset = $2 ORDER BY d.failed_at DESC, d.consumer_group`,
			pid, out.Message.Offset)
		if err != nil {
			return err
		}
		out.DeadLetters, err = pgx.CollectRows(dl, func(r pgx.CollectableRow) (e storage.DeadLetterEntry, err error) {
			return e, r.Scan(&e.Group, &e.Error, &e.RetryCount, &e.FailedAt)
		})
		return err
	})
	if err != nil {
		return storage.FoundMessage{}, false, fmt.Errorf("pgwire: message %q of partition %d: %w", txid, pid, err)
	}
	return out, found, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// findSQL finds the segments of a partition whose hash blob holds $2 (a
// blob position() finds it in may still hold it at an unaligned place: the
// caller checks), newest first, with their tombstoned offsets.
const findSQL = `SELECT s.base_offset, s.created_at, s.payload, h.hashes,
       array(SELECT t.message_offset FROM queen.log_tombstones t
             WHERE t.partition_id = s.partition_id AND t.message_offset BETWEEN s.base_offset AND s.end_offset ORDER BY 1)
FROM queen.log_segments s
CROSS JOIN LATERAL (SELECT coalesce(s.hashes, (SELECT x.hashes FROM queen.log_txns x
                                               WHERE x.partition_id = s.partition_id AND x.end_offset = s.end_offset)) AS hashes) h
WHERE s.partition_id = $1 AND position($2::bytea IN h.hashes) > 0
ORDER BY s.end_offset DESC`

// findByHash answers the stored, not tombstoned messages of partition pid
// whose transactionId is txid, newest first (only the newest with first).
func findByHash(ctx context.Context, conn *pgxpool.Conn, pid int64, txid string, first bool) ([]Message, error) {
	want := segment.Hash(txid)
	rows, err := conn.Query(ctx, findSQL, pid, want[:])
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		var base int64
		var at time.Time
		var blob, hashes []byte
		var gone []int64
		if err := rows.Scan(&base, &at, &blob, &hashes, &gone); err != nil {
			return nil, err
		}
		var frames []segment.Frame
		for k := len(hashes)/segment.HashSize - 1; k >= 0; k-- {
			if string(hashes[k*segment.HashSize:(k+1)*segment.HashSize]) != string(want[:]) || contains(gone, base+int64(k)) {
				continue
			}
			if frames == nil {
				if frames, err = segment.UnpackAll(blob); err != nil {
					return nil, fmt.Errorf("segment at %d: %w", base, err)
				}
			}
			if k >= len(frames) || frames[k].TransactionID != txid { // a hash shared by another id
				continue
			}
			out = append(out, Message{Offset: base + int64(k), Frame: frames[k], CreatedAt: at})
			if first {
				return out, nil
			}
		}
	}
	return out, rows.Err()
}

func contains(sorted []int64, v int64) bool {
	for _, x := range sorted {
		if x == v {
			return true
		}
	}
	return false
}

// messageDeleteSQL tombstones offsets $2 of partition $1 and removes their
// dead letters; it answers how many tombstones it inserted.
var messageDeleteSQL = statement("message_delete")

// DeleteMessage tombstones the messages with transactionId txid in
// partition pid of the tenant (every stored one of that id not tombstoned
// yet, as Queen deletes every row of it) and removes their dead letters, in
// one statement (one transaction). deleted is false when there was none:
// an unknown partition (or another tenant's), or a message unknown, removed
// by retention or tombstoned already. Nothing is erased; the transactionId
// stays known to deduplication.
func (db *DB) DeleteMessage(ctx context.Context, tenant tenancy.TenantID, pid int64, txid string) (deleted bool, err error) {
	err = db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		var n int64
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
			WHERE p.id = $1 AND q.tenant = $2`, pid, pgtype.UUID{Bytes: tenant, Valid: true}).Scan(&n); err != nil || n == 0 {
			return err
		}
		msgs, err := findByHash(ctx, conn, pid, txid, false)
		if err != nil || len(msgs) == 0 {
			return err
		}
		offs := make([]int64, len(msgs))
		for i, m := range msgs {
			offs[i] = m.Offset
		}
		// A concurrent delete of the same message inserted first: its
		// row stays, this one finds nothing to insert and says so.
		if err := conn.QueryRow(ctx, messageDeleteSQL, pid, offs).Scan(&n); err != nil {
			return err
		}
		deleted = n > 0
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("pgwire: delete message %q of partition %d: %w", txid, pid, err)
	}
	return deleted, nil
}
