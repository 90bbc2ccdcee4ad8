package pgwire

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// popKnownSQL is a pop of a partition whose id the caller knows and whose
// cursor row exists: the common pop, in one prepared statement (generic
// plan, pgwire.Open) with no function call around it. docs/consumers.md,
// "The pop", has its rules; in short:
//
//   - The cursor row is read without a lock. Nothing after the cursor (or a
//     live lease) writes nothing: no row version, no lock, no transaction
//     id, so an empty pop costs PostgreSQL a read and no commit flush. The
//     exception is a row that still records an expired lease, or a
//     delivery past the cursor whose messages retention removed: an empty
//     pop clears it, as consumer_pop_v1's does, so that what the row says
//     was delivered (which a lease-less acknowledgement reads) does not
//     depend on the path.
//   - With something to deliver the claim is one compare-and-set UPDATE of
//     the row: only while the cursor is where the read found it and no live
//     lease holds it. A concurrent claim or ack that changed the row makes
//     the UPDATE wait for it and then match nothing (READ COMMITTED re-checks
//     the row): the answer is 'leased', as when a live lease holds it.
//   - A claim under a lease commits asynchronously (synchronous_commit off
//     for its transaction): losing it in a crash is its lease ending early,
//     and the acknowledgement's synchronous commit flushes it first.
//   - One row version per claim, carrying what the lease delivered: the
//     range, its count and its hash entries (migration 0010),
//     so that a whole-batch acknowledgement is one cursor move.
//   - What is delivered is consumer_pop_v1's: whole segments after the cursor
//     until $5 frames, the last cut at the batch, none younger than the
//     queue's delayedProcessing. Only the segments delivered are read: two
//     index probes find the range first (f, e).
//   - Tombstoned offsets (migration 0012) inside (cursor, to] are not
//     delivered: g finds them with one index probe bounded by that range
//     (nothing, on a partition without tombstones), the answer names them,
//     and the claim records the delivery without them and without hash
//     entries (its acknowledgements take the general path, which resolves
//     each transactionId in the range). A range of tombstones alone is
//     stepped over: the cursor moves to its end, no lease is kept, the
//     retry count starts again (the messages it counted are gone), and the
//     answer is 'empty' with the offsets named (consumer_pop_v1 does the
//     same).
//   - 'general' sends the pop to consumer_pop_v1: no cursor row yet (the
//     first pop seeds it from the group's subscription) or a windowBuffer
//     queue; 'missing': no partition with this id for this tenant.
//
// Parameters: partition id, tenant, group, lease (NULL with auto-ack),
// batch, auto-ack. Answer: status, partition name, last offset, cursor (the
// one it moved to, when it stepped over tombstones), to, lease expiry,
// expired, the tombstoned offsets skipped, and a delivered segment (base
// offset, created, payload): a row per segment in offset order when it
// delivered, else one row without a segment.
var popKnownSQL = statement("pop_known_partition")

// popGeneral is the status of popKnownSQL that sends a pop to
// consumer_pop_v1.
const popGeneral = "general"

// popKnown runs popKnownSQL: ok is false when the pop must go through
// consumer_pop_v1 (the partition's cursor row does not exist yet, or its
// queue has a windowBuffer).
func (db *DB) popKnown(ctx context.Context, req PopRequest) (res PopResult, raw popRaw, ok bool, err error) {
	var name pgtype.Text
	var last, cursor, to pgtype.Int8
	var expires pgtype.Timestamptz
	err = db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		raw = popRaw{} // a retry runs this again (withConn)
		rows, err := conn.Query(ctx, popKnownSQL, req.PartitionID, pgtype.UUID{Bytes: req.Tenant, Valid: true}, req.Group,
			pgtype.UUID{Bytes: req.Lease, Valid: !req.AutoAck}, req.Batch, req.AutoAck)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var base pgtype.Int8
			var created pgtype.Timestamptz
			var payload []byte
			if err := rows.Scan(&res.Status, &name, &last, &cursor, &to, &expires, &res.Expired, &raw.gone, &base, &created, &payload); err != nil {
				return err
			}
			if base.Valid {
				raw.bases, raw.created, raw.payloads = append(raw.bases, base.Int64), append(raw.created, created.Time), append(raw.payloads, payload)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return res, raw, false, fmt.Errorf("pgwire: pop partition id %d for %q: %w", req.PartitionID, req.Group, err)
	}
	if res.Status == popGeneral {
		return res, raw, false, nil
	}
	res.PartitionID, res.Partition, res.Last, res.Cursor, res.To = req.PartitionID, name.String, last.Int64, cursor.Int64, to.Int64
	res.LeaseExpires = expires.Time
	return res, raw, true, nil
}

// popRaw is what a pop statement answers besides PopResult's fields: the
// delivered segments, in offset order, and the tombstoned offsets of the
// range (not delivered; with status empty: stepped over).
type popRaw struct {
	bases    []int64
	created  []time.Time
	payloads [][]byte
	gone     []int64
}
