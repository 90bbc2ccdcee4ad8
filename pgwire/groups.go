package pgwire

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// Consumer groups as Queen's admin routes see them (docs/admin-groups.md): the
// cursors read with their lag, and the changes an operator makes to them
// (delete, seek, the subscription's start). docs/admin-groups.md has the
// rules.

// GroupCursor is one consumer group's cursor on one partition, with what
// the admin routes show of it. Lag is read from the partition's high-water
// mark and one primary-key probe of the segment after the cursor: no
// segment is scanned.
type GroupCursor struct {
	Group, Queue, Partition string
	PartitionID             int64
	// Last is the partition's high-water mark; Cursor the last acknowledged
	// offset; Start where seeding or the last seek put the cursor.
	Last, Cursor, Start int64
	// Lease is the live lease holding the partition for the group, if
	// LeaseLive.
	Lease     [16]byte
	LeaseLive bool
	UpdatedAt time.Time
	// Lag is the messages stored after the cursor; OldestAt the createdAt
	// of the first of them (zero when none) and LagSeconds its age by the
	// database's clock.
	Lag        int64
	OldestAt   time.Time
	LagSeconds int64
	// The group's subscription on the queue: Mode "all", "new" or "from"
	// ("" when none is stored), its start and when it was made.
	SubMode           string
	SubAt, SubCreated time.Time
}

// groupCursorsSQL reads a tenant's cursors (of one group, or of every group
// when $2 is ”), by group, queue and partition name. The segment after
// the cursor is found through the primary key (partition, end_offset): its
// createdAt is the oldest message's after the cursor, and its base bounds
// the lag when retention removed what followed the cursor.
var groupCursorsSQL = statement("group_cursors")

// GroupCursors reads the tenant's cursors of group ("": every group).
func (db *DB) GroupCursors(ctx context.Context, tenant tenancy.TenantID, group string) ([]GroupCursor, error) {
	var out []GroupCursor
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		out = out[:0]
		rows, err := conn.Query(ctx, groupCursorsSQL, pgtype.UUID{Bytes: tenant, Valid: true}, group)
		if err != nil {
			return err
		}
		out, err = pgx.AppendRows(out, rows, func(r pgx.CollectableRow) (g GroupCursor, err error) {
			var lease pgtype.UUID
			var oldest, subAt, subCreated pgtype.Timestamptz
			err = r.Scan(&g.Group, &g.Queue, &g.Partition, &g.PartitionID, &g.Last, &g.Cursor, &g.Start, &lease, &g.LeaseLive,
				&g.UpdatedAt, &g.Lag, &oldest, &g.LagSeconds, &g.SubMode, &subAt, &subCreated)
			g.Lease, g.LeaseLive = lease.Bytes, g.LeaseLive && lease.Valid
			g.OldestAt, g.SubAt, g.SubCreated = oldest.Time, subAt.Time, subCreated.Time
			if !oldest.Valid {
				g.LagSeconds = 0
			}
			return g, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgwire: cursors of consumer group %q: %w", group, err)
	}
	return out, nil
}

// GroupPartition is a partition whose cursor a delete or a seek changed:
// the consume room tells the read side and forgets the hot tail's note of
// it.
type GroupPartition struct {
	Queue, Partition string
	PartitionID      int64
	// Cursor is where a seek put the cursor (0 after a delete).
	Cursor int64
}

// deleteGroupSQL removes a group's cursors, leases with them, on the
// tenant's queues (every queue when $3 is ”), and with $4 its
// subscriptions there too. Dead letters stay. The cursor rows are locked
// first, in ascending (partition, group) (the lock is taken over the
// sorted rows), the one lock order; no partition row is locked.
var deleteGroupSQL = statement("group_delete")

// DeleteGroup removes group's cursors (and leases) on the tenant's queue
// ("": on every queue of the tenant), and with subscriptions its stored
// subscriptions there, in one transaction. It answers the partitions whose
// cursor went.
func (db *DB) DeleteGroup(ctx context.Context, tenant tenancy.TenantID, group, queue string, subscriptions bool) ([]GroupPartition, error) {
	out, err := db.groupPartitions(ctx, deleteGroupSQL, pgtype.UUID{Bytes: tenant, Valid: true}, group, queue, subscriptions)
	if err != nil {
		return nil, fmt.Errorf("pgwire: delete consumer group %q (queue %q): %w", group, queue, err)
	}
	return out, nil
}

// SeekRequest moves a group's cursors on a queue of a tenant: on every
// partition of the queue, or on Partition alone.
type SeekRequest struct {
	Tenant       tenancy.TenantID
	Group, Queue string
	Partition    string // "": every partition of the queue
	ToEnd        bool   // to the high-water mark; else to At
	At           time.Time
}

// seekSQL sets a group's cursor on partitions of a queue, making the cursor
// rows the group lacks: to the high-water mark ($5), or to the offset
// before the first stored message created after $6 (the high-water mark
// when none is). The last segment created at or before $6 is found looking
// back from the end; createdAt grows with the offset (the stamp is taken
// under the partition's lock), so the next one is the first created after
// it. With none at or before, the cursor goes before the first stored
// segment.
//
// Every seeked row forgets its delivery: no lease, nothing delivered,
// acknowledged or retried, no hash entries, no JetStream consumer's
// acknowledged offsets or delivery counts (migration 0018), so no
// acknowledgement of a lease from before the seek matches it (the whole-batch compare-and-set
// checks the lease, consumer_ack_v1 the lease and the delivered range).
// start_offset records the seek. The rows are written in ascending
// partition id (the insert takes its input in that order and locks each
// conflicting row as it comes), the one lock order; partition rows are
// read, not locked.
var seekSQL = statement("group_seek")

// SeekGroup moves the group's cursors as req says, in one statement
// (seekSQL), and answers the partitions it set. None: no such queue (or
// partition) of the tenant.
func (db *DB) SeekGroup(ctx context.Context, req SeekRequest) ([]GroupPartition, error) {
	at := pgtype.Timestamptz{Time: req.At, Valid: !req.ToEnd}
	out, err := db.groupPartitions(ctx, seekSQL, pgtype.UUID{Bytes: req.Tenant, Valid: true}, req.Group, req.Queue, req.Partition, req.ToEnd, at)
	if err != nil {
		return nil, fmt.Errorf("pgwire: seek consumer group %q on %s: %w", req.Group, req.Queue, err)
	}
	return out, nil
}

// groupPartitions runs a statement answering (queue, partition, id[, cursor])
// rows.
func (db *DB) groupPartitions(ctx context.Context, sql string, args ...any) ([]GroupPartition, error) {
	var out []GroupPartition
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		out = out[:0]
		rows, err := conn.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var g GroupPartition
			dst := []any{&g.Queue, &g.Partition, &g.PartitionID, &g.Cursor}
			if err := rows.Scan(dst[:len(rows.FieldDescriptions())]...); err != nil {
				return err
			}
			out = append(out, g)
		}
		return rows.Err()
	})
	return out, err
}

// setSubscriptionSQL sets the start of every stored subscription of a group
// on the tenant's queues; an 'all' one becomes 'from' the time (the caller
// asked for a start). Queue mode has no subscription to move: its seeding
// ignores subscriptions.
const setSubscriptionSQL = `/* queen:group-subscription */ UPDATE queen.consumer_subscriptions s SET
    start_after = $3, mode = CASE WHEN s.mode = 'all' THEN 'from' ELSE s.mode END
FROM queen.queues q
WHERE q.id = s.queue_id AND q.tenant = $1 AND s.consumer_group = $2 AND s.consumer_group <> '` + QueueMode + `'`

// SetSubscriptionStart makes at the start of every stored subscription of
// group on the tenant's queues: where the partitions it has no cursor on
// yet start. It moves no cursor. It answers how many it changed.
func (db *DB) SetSubscriptionStart(ctx context.Context, tenant tenancy.TenantID, group string, at time.Time) (int64, error) {
	var n int64
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		tag, err := conn.Exec(ctx, setSubscriptionSQL, pgtype.UUID{Bytes: tenant, Valid: true}, group, at)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("pgwire: subscription of consumer group %q: %w", group, err)
	}
	return n, nil
}
