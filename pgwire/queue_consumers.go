package pgwire

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// A queue's partitions and its consumer groups' cursors on them, for the
// web console's queue page (docs/console.md). One statement reads the
// queue's row, its partition rows (by the queue's index), the consumer rows
// of each (by their primary key), the queue's subscriptions (by theirs) and
// one primary-key probe per partition for its first stored segment, which
// says what retention removed: no other queue's partition is read
// (TestQueueConsumersReadOnlyTheQueue reads the plan). Counts are as the
// admin counts' (admin_queues.go): with gone the highest offset no longer
// stored, a partition stores last_offset - gone messages and a cursor lags
// by last_offset - greatest(cursor, gone).
//
// A group's lag is over every partition of the queue, not only those it has
// popped: a partition it has no cursor on yet counts from where its first
// pop would seed the cursor (consumer_pop_v1): queue mode, and a group whose
// stored subscription is "all" (or that has none stored), from the
// beginning; a "new" or "from" subscription after the last segment created
// at or before its start. That seed is a walk back from the partition's end
// over the segments younger than the start, as the pop's; a partition whose
// first stored segment is already younger (born after the subscription)
// needs no walk.

// ConsumerPartition is one partition of a queue.
type ConsumerPartition struct {
	ID        int64
	Name      string
	Last      int64     // the high-water mark
	LastWrite time.Time // zero: nothing written yet
	Messages  int64     // stored: Last less what retention removed
}

// ConsumerCursor is one group's cursor on one partition of the queue.
type ConsumerCursor struct {
	Group       string
	PartitionID int64
	Partition   string
	Cursor      int64
	Lag         int64 // messages stored after the cursor
	// Popped is false for a partition the group has no cursor on yet:
	// Cursor is then where its first pop would start.
	Popped bool
	// Lease and Expires are the live lease, when LeaseLive; Delivered what
	// it delivered (0 without a live lease).
	Lease     [16]byte
	LeaseLive bool
	Expires   time.Time
	Delivered int64
}

// queueConsumersSQL: a row per (partition, group of the queue), a
// partition once with a null group when the queue has no group, and the
// queue once with null partition when it has none; no row when the tenant
// has no such queue. The queue's groups are those with a cursor on one of
// its partitions or a stored subscription to it. Not ordered here: ORDER BY
// p.name would have the planner weigh a sort against an index walk for
// nothing, so the caller sorts.
// The queue-mode group is written in the file as QueueMode's value.
var queueConsumersSQL = statement("queue_consumers")

// QueueConsumers reads one of a tenant's queues: its partitions by name,
// and every cursor on them by group, then partition name. found is false
// when the tenant has no such queue.
func (db *DB) QueueConsumers(ctx context.Context, tenant tenancy.TenantID, queue string) (parts []ConsumerPartition, cursors []ConsumerCursor, found bool, err error) {
	err = db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		parts, cursors, found = parts[:0], cursors[:0], false
		rows, err := conn.Query(ctx, queueConsumersSQL, tenantArg(tenant), queue)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			found = true
			var pid, last, msgs, cursor, lag, delivered pgtype.Int8
			var pname, group pgtype.Text
			var wrote, expires pgtype.Timestamptz
			var lease pgtype.UUID
			var popped, live pgtype.Bool
			if err := rows.Scan(&pid, &pname, &last, &wrote, &msgs, &group, &popped, &cursor, &lag, &lease, &expires, &live, &delivered); err != nil {
				return err
			}
			if !pid.Valid { // the queue has no partition
				continue
			}
			if len(parts) == 0 || parts[len(parts)-1].ID != pid.Int64 {
				p := ConsumerPartition{ID: pid.Int64, Name: pname.String, Last: last.Int64, Messages: msgs.Int64}
				if last.Int64 > 0 {
					p.LastWrite = wrote.Time
				}
				parts = append(parts, p)
			}
			if !group.Valid {
				continue
			}
			c := ConsumerCursor{Group: group.String, PartitionID: pid.Int64, Partition: pname.String, Cursor: cursor.Int64, Lag: lag.Int64, Popped: popped.Bool}
			if live.Bool {
				c.Lease, c.LeaseLive, c.Expires, c.Delivered = lease.Bytes, true, expires.Time, delivered.Int64
			}
			cursors = append(cursors, c)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, nil, false, fmt.Errorf("pgwire: consumers of %q: %w", queue, err)
	}
	// A partition's rows come together (a nested loop per partition), but
	// nothing promises it: drop any repeat after sorting.
	slices.SortFunc(parts, func(a, b ConsumerPartition) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
	parts = slices.CompactFunc(parts, func(a, b ConsumerPartition) bool { return a.ID == b.ID })
	slices.SortFunc(cursors, func(a, b ConsumerCursor) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.PartitionID, b.PartitionID))
	})
	return parts, cursors, found, nil
}
