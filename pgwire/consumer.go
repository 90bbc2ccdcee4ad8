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

// QueueMode is storage.QueueMode, which the statements name.
const QueueMode = storage.QueueMode

// Pop outcomes (PopResult.Status).
const (
	PopDelivered = "ok"      // messages after the cursor, under the lease
	PopEmpty     = "empty"   // nothing after the cursor (the lease was released)
	PopLeased    = "leased"  // another consumer holds a live lease
	PopWindow    = "window"  // the newest message is inside the queue's windowBuffer
	PopMissing   = "missing" // no such partition
)

// PopRequest is one pop of one partition for one group.
type PopRequest struct {
	Tenant tenancy.TenantID
	// The partition: PartitionID when known (> 0), else Queue and Partition.
	PartitionID      int64
	Queue, Partition string
	Group            string
	// Lease is the pop's lease id (shared by the partitions one request
	// claims); unused with AutoAck.
	Lease   [16]byte
	Batch   int
	AutoAck bool
	// MaxBytes bounds the answer (PopCost of each message, summed); 0: no
	// bound. At least one message is delivered.
	MaxBytes int64
	// SubscriptionMode ("all", "new") and SubscriptionFrom (zero: none)
	// seed a named group's cursor the first time it pops the queue.
	SubscriptionMode string
	SubscriptionFrom time.Time
}

// PopResult is what a pop of one partition found.
type PopResult struct {
	Status      string
	PartitionID int64
	Partition   string
	// Last is the partition's last offset when the pop looked; Cursor the
	// group's cursor it delivered after; To the last offset delivered.
	Last, Cursor, To int64
	LeaseExpires     time.Time
	// Expired: the claim took over an expired lease.
	Expired  bool
	Messages []Message
}

// Pop claims a partition for a group and delivers up to Batch messages
// after its cursor, in one statement and one round trip: popKnownSQL when
// the partition's id is known and its cursor row exists, else
// consumer_pop_v1 (which seeds the row). Tombstoned offsets are not
// delivered; a claim that found only tombstones stepped the cursor over
// them, and the pop claims again, up to maxTombstoneSteps times.
func (db *DB) Pop(ctx context.Context, req PopRequest) (PopResult, error) {
	for step := 1; ; step++ {
		res, raw, err := db.popOnce(ctx, req)
		if err != nil {
			return res, err
		}
		if res.Status != PopEmpty || len(raw.gone) == 0 || step == maxTombstoneSteps {
			return db.popDecode(ctx, req, res, raw)
		}
		if req.PartitionID <= 0 {
			req.PartitionID = res.PartitionID
		}
	}
}

// maxTombstoneSteps bounds the claims of one Pop that step over ranges of
// tombstones only: a run of deleted messages longer than that many batches
// answers empty once (the cursor moved; the next pop goes on).
const maxTombstoneSteps = 8

// popOnce is one claim: popKnownSQL or consumer_pop_v1.
func (db *DB) popOnce(ctx context.Context, req PopRequest) (PopResult, popRaw, error) {
	if req.PartitionID > 0 {
		res, raw, ok, err := db.popKnown(ctx, req)
		if err != nil || ok {
			return res, raw, err
		}
	}
	return db.popFunction(ctx, req)
}

// popFunction is one call of consumer_pop_v1: by partition id when req has
// one, else by queue and partition name.
func (db *DB) popFunction(ctx context.Context, req PopRequest) (PopResult, popRaw, error) {
	var res PopResult
	var raw popRaw
	var name pgtype.Text
	var pid, last, cursor, to pgtype.Int8
	var expires pgtype.Timestamptz
	var expired pgtype.Bool
	from := pgtype.Timestamptz{Time: req.SubscriptionFrom, Valid: !req.SubscriptionFrom.IsZero()}
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		return conn.QueryRow(ctx, `SELECT o_status, o_pid, o_name, o_last, o_cursor, o_to, o_expires, o_expired, o_bases, o_created, o_payloads, o_gone
			FROM queen.consumer_pop_v1($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			pgtype.UUID{Bytes: req.Tenant, Valid: true}, req.Queue, req.Partition, req.PartitionID, req.Group,
			pgtype.UUID{Bytes: req.Lease, Valid: !req.AutoAck}, req.Batch, req.AutoAck, req.SubscriptionMode, from).
			Scan(&res.Status, &pid, &name, &last, &cursor, &to, &expires, &expired, &raw.bases, &raw.created, &raw.payloads, &raw.gone)
	})
	if err != nil {
		return res, raw, fmt.Errorf("pgwire: pop %s/%s (partition id %d) for %q: %w", req.Queue, req.Partition, req.PartitionID, req.Group, err)
	}
	res.PartitionID, res.Partition, res.Last, res.Cursor, res.To = pid.Int64, name.String, last.Int64, cursor.Int64, to.Int64
	res.LeaseExpires, res.Expired = expires.Time, expired.Bool
	return res, raw, nil
}

// popDecode turns a delivering pop's segments into its messages, (Cursor,
// To] less the tombstoned offsets, cut at req.MaxBytes (recording the
// cut).
func (db *DB) popDecode(ctx context.Context, req PopRequest, res PopResult, raw popRaw) (PopResult, error) {
	if res.Status != PopDelivered {
		// Only a delivery takes over an expired lease: popKnownSQL leaves
		// an expired lease where it delivers nothing, and consumer_pop_v1,
		// which claims before it looks, releases it then; neither is an
		// expiry the pop took over.
		res.Expired = false
		return res, nil
	}
	bases, created, payloads := raw.bases, raw.created, raw.payloads
	if len(bases) != len(created) || len(bases) != len(payloads) {
		return res, fmt.Errorf("pgwire: pop of partition %d: misaligned answer", res.PartitionID)
	}
	// Retention may have left the cursor far below the first segment: the
	// messages are at most the batch.
	res.Messages = make([]Message, 0, min(res.To-res.Cursor, int64(max(req.Batch, 1))))
	var cost int64
	keep := -1       // the messages the bound keeps, when it cuts
	gone := raw.gone // ascending, as the frames are read
	for i, base := range bases {
		frames, err := segment.UnpackAll(payloads[i])
		if err != nil {
			return res, fmt.Errorf("pgwire: pop of partition %d: segment at %d: %w", res.PartitionID, base, err)
		}
		for k, f := range frames {
			off := base + int64(k)
			if off <= res.Cursor || off > res.To {
				continue
			}
			for len(gone) > 0 && gone[0] < off {
				gone = gone[1:]
			}
			if len(gone) > 0 && gone[0] == off {
				continue
			}
			if cost += PopCost(&f, res.Partition, req.Group); keep < 0 && req.MaxBytes > 0 && len(res.Messages) > 0 && cost > req.MaxBytes {
				keep = len(res.Messages)
			}
			res.Messages = append(res.Messages, Message{Offset: off, Frame: f, CreatedAt: created[i]})
		}
	}
	if keep >= 0 {
		if err := db.shrinkPop(ctx, req, &res, keep); err != nil {
			return res, err
		}
	}
	return res, nil
}

// PopCost is what one popped message adds to an answer, at most: its
// payload and ids, the names it repeats, and the fixed fields (offsets,
// UUIDs, times, keys).
func PopCost(f *segment.Frame, partition, group string) int64 {
	return int64(len(f.Payload)+len(f.TransactionID)+len(f.TraceID)+len(partition)+len(group)) + popMessageOverhead
}

// popMessageOverhead bounds a popped message's fixed fields in the answer.
const popMessageOverhead = 512

// shrinkPop records that a pop delivers only the first keep messages, the
// answer's bound having cut what consumer_pop_v1 took. If something moved the
// cursor row since (another pop of an auto-ack group), the cut messages
// stay delivered and go out with the rest.
func (db *DB) shrinkPop(ctx context.Context, req PopRequest, res *PopResult, keep int) error {
	to := res.Messages[keep-1].Offset
	var applied bool
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		return conn.QueryRow(ctx, `SELECT queen.consumer_shrink_v1($1, $2, $3, $4, $5, $6)`,
			res.PartitionID, req.Group, pgtype.UUID{Bytes: req.Lease, Valid: !req.AutoAck}, res.To, to, keep).Scan(&applied)
	})
	if err != nil {
		return fmt.Errorf("pgwire: pop of partition %d: recording a cut answer: %w", res.PartitionID, err)
	}
	if applied {
		res.To, res.Messages = to, res.Messages[:keep]
	}
	return nil
}

// UnclaimAutoAck undoes an auto-acknowledged claim of a partition whose
// answer was never sent: the group's cursor goes back from to to cursor,
// where the claim found it (consumer_shrink_v1 cut to nothing). Only while
// nothing moved the cursor since; reports whether it applied.
func (db *DB) UnclaimAutoAck(ctx context.Context, pid int64, group string, cursor, to int64) (bool, error) {
	var applied bool
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		return conn.QueryRow(ctx, `SELECT queen.consumer_shrink_v1($1, $2, NULL, $3, $4, 0)`, pid, group, to, cursor).Scan(&applied)
	})
	if err != nil {
		return false, fmt.Errorf("pgwire: undoing an auto-acknowledged claim of partition %d: %w", pid, err)
	}
	return applied, nil
}

// AckItem is one acknowledgement: a message by its transactionId, a status
// (completed, success, failed, dlq, retry; "" is completed) and an error.
type AckItem struct {
	TransactionID string
	Status        string
	Error         string
}

// AckResult answers the acknowledgements of one partition.
type AckResult struct {
	// Errs[i] is "" where item i succeeded, else why not.
	Errs []string
	// DLQ[i]: item i was written to the dead letters.
	DLQ []bool
	// Released: the lease was released (its acks reached what it
	// delivered, or a failure hands the messages back).
	Released         bool
	Queue, Partition string
	Cursor           int64
}

// Ack applies acknowledgements of one partition for one group
// (consumer_ack_v1). lease nil: not checked against a lease.
func (db *DB) Ack(ctx context.Context, tenant tenancy.TenantID, pid int64, group string, lease *[16]byte, items []AckItem) (AckResult, error) {
	hashes := make([]byte, 0, len(items)*segment.HashSize)
	statuses := make([]string, len(items))
	errs := make([]pgtype.Text, len(items))
	txids := make([]string, len(items))
	for i, it := range items {
		h := segment.Hash(it.TransactionID)
		hashes = append(hashes, h[:]...)
		statuses[i], txids[i] = it.Status, it.TransactionID
		errs[i] = pgtype.Text{String: it.Error, Valid: it.Error != ""}
	}
	l := pgtype.UUID{}
	if lease != nil {
		l = pgtype.UUID{Bytes: *lease, Valid: true}
	}
	var res AckResult
	var oerr []pgtype.Text
	var queue, name pgtype.Text
	var cursor pgtype.Int8
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		return conn.QueryRow(ctx, `SELECT o_err, o_dlq, o_released, o_queue, o_name, o_cursor FROM queen.consumer_ack_v1($1, $2, $3, $4, $5, $6, $7, $8)`,
			pgtype.UUID{Bytes: tenant, Valid: true}, pid, group, l, hashes, statuses, errs, txids).
			Scan(&oerr, &res.DLQ, &res.Released, &queue, &name, &cursor)
	})
	if err != nil {
		return res, fmt.Errorf("pgwire: ack of partition %d for %q: %w", pid, group, err)
	}
	res.Queue, res.Partition, res.Cursor = queue.String, name.String, cursor.Int64
	res.Errs = make([]string, len(items))
	for i := range res.Errs {
		if i < len(oerr) && oerr[i].Valid {
			res.Errs[i] = oerr[i].String
		}
	}
	if len(res.DLQ) != len(items) {
		res.DLQ = make([]bool, len(items))
	}
	return res, nil
}

// ExtendLease sets a live lease's expiry to max(current, now + seconds) on
// every partition it holds; ok is false when it is unknown or expired.
func (db *DB) ExtendLease(ctx context.Context, tenant tenancy.TenantID, lease [16]byte, seconds int) (expires time.Time, ok bool, err error) {
	var at pgtype.Timestamptz
	err = db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		return conn.QueryRow(ctx, `SELECT queen.consumer_extend_v1($1, $2, $3)`,
			pgtype.UUID{Bytes: tenant, Valid: true}, pgtype.UUID{Bytes: lease, Valid: true}, seconds).Scan(&at)
	})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("pgwire: extend lease: %w", err)
	}
	return at.Time, at.Valid, nil
}

// PartitionMark is what the database says about a partition a group may
// have messages on.
type PartitionMark struct {
	ID     int64
	Name   string
	Last   int64
	Cursor int64
}

// PendingPartitions lists the partitions of a queue with messages past the
// group's cursor (or with no cursor yet). It reads every partition of the
// queue: the read side calls it once per queue and group, then keeps the
// list from announcements.
func (db *DB) PendingPartitions(ctx context.Context, tenant tenancy.TenantID, queue, group string) ([]PartitionMark, error) {
	var out []PartitionMark
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		out = out[:0] // a retry runs this again (withConn)
		rows, err := conn.Query(ctx, `SELECT p.id, p.name, p.last_offset, coalesce(c.cursor_offset, 0)
			FROM queen.queues q JOIN queen.log_partitions p ON p.queue_id = q.id
			LEFT JOIN queen.consumer_cursors c ON c.partition_id = p.id AND c.consumer_group = $3
			WHERE q.tenant = $1 AND q.name = $2 AND p.last_offset > coalesce(c.cursor_offset, 0)
			ORDER BY p.id`, pgtype.UUID{Bytes: tenant, Valid: true}, queue, group)
		if err != nil {
			return err
		}
		out, err = pgx.AppendRows(out, rows, pgx.RowToStructByPos[PartitionMark])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgwire: partitions of %s pending for %q: %w", queue, group, err)
	}
	return out, nil
}

// DeadLetter is one message a group gave up on.
type DeadLetter struct {
	ID            int64
	TransactionID string
	PartitionID   int64
	Queue         string
	Partition     string
	Group         string
	Error         string
	RetryCount    int
	Offset        int64
	FailedAt      time.Time
	// Message is the stored message; Found is false when retention has
	// removed it.
	Message Message
	Found   bool
}

// notTombstoned leaves out the dead letters d of tombstoned messages: a
// delete removes its message's dead letters, but a copy delivered before it
// can still be failed into them afterwards.
const notTombstoned = `NOT EXISTS (SELECT 1 FROM queen.log_tombstones t
	WHERE t.partition_id = d.partition_id AND t.message_offset = d.message_offset)`

// scanDeadLetters appends rows of dead letters of queue to out and closes
// rows. Each row is the dead letter (id, transaction_id, partition_id, the
// partition's name, consumer_group, the error (empty: none), retry_count,
// message_offset, failed_at) and the segment that holds its message
// (base_offset, created_at, payload; null when retention removed it).
func scanDeadLetters(rows pgx.Rows, queue string, out []DeadLetter) ([]DeadLetter, error) {
	defer rows.Close()
	for rows.Next() {
		d := DeadLetter{Queue: queue}
		var base pgtype.Int8
		var at pgtype.Timestamptz
		var blob []byte
		if err := rows.Scan(&d.ID, &d.TransactionID, &d.PartitionID, &d.Partition, &d.Group, &d.Error, &d.RetryCount, &d.Offset, &d.FailedAt,
			&base, &at, &blob); err != nil {
			return out, err
		}
		if base.Valid {
			f, err := segment.Unpack(blob, int(d.Offset-base.Int64))
			if err != nil {
				return out, fmt.Errorf("dead letter %d: segment at %d: %w", d.ID, base.Int64, err)
			}
			d.Message, d.Found = Message{Offset: d.Offset, Frame: f, CreatedAt: at.Time}, true
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// DeadLetters lists a queue's dead letters (group "": every group), oldest
// first, with the total count; tombstoned messages are not among them.
func (db *DB) DeadLetters(ctx context.Context, tenant tenancy.TenantID, queue, group string, limit, offset int) ([]DeadLetter, int64, error) {
	var out []DeadLetter
	var total int64
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		out = out[:0] // a retry runs this again (withConn)
		t := pgtype.UUID{Bytes: tenant, Valid: true}
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM queen.dead_letters d JOIN queen.queues q ON q.id = d.queue_id
			WHERE q.tenant = $1 AND q.name = $2 AND ($3 = '' OR d.consumer_group = $3) AND `+notTombstoned,
			t, queue, group).Scan(&total); err != nil {
			return err
		}
		rows, err := conn.Query(ctx, `SELECT d.id, d.transaction_id, d.partition_id, p.name, d.consumer_group, coalesce(d.error_message, ''),
				d.retry_count, d.message_offset, d.failed_at, s.base_offset, s.created_at, s.payload
			FROM queen.dead_letters d JOIN queen.queues q ON q.id = d.queue_id
			JOIN queen.log_partitions p ON p.id = d.partition_id
			LEFT JOIN LATERAL (SELECT x.base_offset, x.created_at, x.payload FROM queen.log_segments x
			                   WHERE x.partition_id = d.partition_id AND x.end_offset >= d.message_offset
			                   ORDER BY x.end_offset LIMIT 1) s ON s.base_offset <= d.message_offset
			WHERE q.tenant = $1 AND q.name = $2 AND ($3 = '' OR d.consumer_group = $3) AND `+notTombstoned+`
			ORDER BY d.queue_id, d.consumer_group, d.id LIMIT $4 OFFSET $5`, t, queue, group, limit, offset)
		if err != nil {
			return err
		}
		out, err = scanDeadLetters(rows, queue, out)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("pgwire: dead letters of %s: %w", queue, err)
	}
	return out, total, nil
}

// ConsumerLag reads every group's lag (for the metrics, at scrape time).
func (db *DB) ConsumerLag(ctx context.Context) ([]storage.GroupLag, error) {
	var out []storage.GroupLag
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		out = out[:0] // a retry runs this again (withConn)
		rows, err := conn.Query(ctx, `SELECT q.tenant, q.name, c.consumer_group, sum(greatest(p.last_offset - c.cursor_offset, 0))::bigint
			FROM queen.consumer_cursors c JOIN queen.log_partitions p ON p.id = c.partition_id JOIN queen.queues q ON q.id = p.queue_id
			GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`)
		if err != nil {
			return err
		}
		out, err = pgx.AppendRows(out, rows, func(r pgx.CollectableRow) (g storage.GroupLag, err error) {
			var t pgtype.UUID
			err = r.Scan(&t, &g.Queue, &g.Group, &g.Lag)
			g.Tenant = t.Bytes
			return g, err
		})
		return err
	})
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("pgwire: consumer lag: %w", err)
	}
	return out, nil
}
