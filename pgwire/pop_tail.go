package pgwire

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// popTailSQL claims deliveries the bridge serves from its own memory (the
// hot tail, cursors.Tail), of one or many partitions, for one or many
// pops (groups, leases, tenants: the claims of concurrent pops are fused
// into one statement), in one statement: a compare-and-set of each cursor
// row with no segment read. A claim applies only when its cursor is where
// the bridge believes, no live lease holds the row, the queue (of the
// claim's tenant) neither delays nor windows its messages, the first
// segment delivered is still stored (retention removes a partition's
// segments oldest first, so the rest are too), and no offset it delivers is
// tombstoned (migration 0012: an index probe bounded by (cursor, to], which
// finds nothing on a partition without tombstones; the frames in memory
// cannot tell); otherwise it answers no row for it and writes nothing, and
// the pop reads PostgreSQL (popKnownSQL), which leaves the tombstoned
// offsets out. Each claim's row is looked up and locked by a lateral
// subquery (a subquery that locks is never flattened into a join, so it
// stays keyed look-ups whatever the generic plan guesses of the arrays'
// length), one after the other in ascending (partition, group) (v is
// sorted), the one lock order; the UPDATE finds the locked rows by their
// ctid. Two claims of one row in a call (two pops of a named partition at
// once) lock it once; the UPDATE applies one of them and answers it alone.
// Each row records what is delivered as the other pops do, range and count,
// and the digest of the hash entries (Digest: 32 bytes where the entries of
// a batch of 100 are 1,600, written by the claim and again by its
// acknowledgement's row version). The commit is asynchronous, as
// popKnownSQL's, unless a claim auto-acknowledges (its cursor moves:
// consumed).
//
// Parameters, one array element per claim: tenant, group, lease (NULL with
// auto-ack), auto-ack, partition id, expected cursor, to, count, digest of
// the hash entries, first segment's end. Answer, a row per applied claim:
// ordinal, name, last offset, lease expiry, expired.
const popTailSQL = `/* queen:pop-tail */ WITH v AS (
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::bool[], $5::int8[], $6::int8[], $7::int8[], $8::int4[], $9::bytea[], $10::int8[])
        WITH ORDINALITY AS v(tenant, grp, lease, auto, pid, cur, to_off, n, h, fe, ord)
    ORDER BY pid, grp
), l AS (
    SELECT v.ord, v.pid, v.lease, v.auto, v.to_off, v.n, v.h, x.*
    FROM v CROSS JOIN LATERAL (
        SELECT c.ctid AS tid, p.name, p.last_offset, c.lease_id IS NOT NULL AS expired,
               queen.consumer_option_v2(q.other_options, 'leaseTime') AS lease_s
        FROM queen.consumer_cursors c
        JOIN queen.log_partitions p ON p.id = c.partition_id
        JOIN queen.queues q ON q.id = p.queue_id
        WHERE c.partition_id = v.pid AND c.consumer_group = v.grp AND q.tenant = v.tenant
          AND c.cursor_offset = v.cur AND (c.lease_id IS NULL OR c.lease_expires_at <= clock_timestamp())
          AND queen.consumer_option_v2(q.other_options, 'delayedProcessing') = 0
          AND queen.consumer_option_v2(q.other_options, 'windowBuffer') = 0
          AND EXISTS (SELECT 1 FROM queen.log_segments s WHERE s.partition_id = v.pid AND s.end_offset = v.fe)
          AND NOT EXISTS (SELECT 1 FROM queen.log_tombstones t
                          WHERE t.partition_id = v.pid AND t.message_offset > v.cur AND t.message_offset <= v.to_off)
        FOR UPDATE OF c) x
), u AS (
    UPDATE queen.consumer_cursors c SET
        lease_id         = CASE WHEN l.auto THEN NULL ELSE l.lease END,
        lease_expires_at = CASE WHEN l.auto THEN NULL ELSE clock_timestamp() + queen.consumer_duration_v1(l.lease_s) END,
        cursor_offset    = CASE WHEN l.auto THEN l.to_off ELSE c.cursor_offset END,
        delivered_to     = l.to_off,
        delivered_count  = l.n,
        acked_count      = CASE WHEN l.auto THEN l.n ELSE 0 END,
        retry_count      = CASE WHEN l.auto THEN 0 ELSE c.retry_count END,
        delivered_hashes = l.h,
        updated_at       = clock_timestamp()
    FROM l
    WHERE c.ctid = l.tid
    RETURNING l.ord, l.name, l.last_offset, c.lease_expires_at, l.expired, l.auto
), async AS (
    SELECT set_config('synchronous_commit', 'off', true)
    WHERE EXISTS (SELECT 1 FROM u) AND NOT EXISTS (SELECT 1 FROM u WHERE u.auto)
)
SELECT u.ord, u.name, u.last_offset, u.lease_expires_at, u.expired FROM u LEFT JOIN async ON true`

// popTailOneSQL is popTailSQL for a call of one claim: the same
// conditions and the same row written, as one UPDATE of the keyed row
// with no arrays, sort or lateral look-up (one row has no lock order to
// keep). PostgreSQL builds a statement's executor for every call, and for
// popTailSQL that is a fifth of the claim's CPU; a lone consumer's claims
// are all of this form. expired reads the row as the statement's snapshot
// found it (a lease released between that read and the UPDATE's re-check
// counts as expired; it only feeds a counter). Parameters: popTailSQL's,
// one value each. Answer: popTailSQL's row, ordinal 1, when it applied.
const popTailOneSQL = `/* queen:pop-tail-one */ WITH async AS (
    SELECT CASE WHEN $4 THEN '' ELSE set_config('synchronous_commit', 'off', true) END AS s
)
UPDATE queen.consumer_cursors c SET
    lease_id         = CASE WHEN $4 THEN NULL ELSE $3::uuid END,
    lease_expires_at = CASE WHEN $4 THEN NULL
                            ELSE clock_timestamp() + queen.consumer_duration_v1(queen.consumer_option_v2(q.other_options, 'leaseTime')) END,
    cursor_offset    = CASE WHEN $4 THEN $7::int8 ELSE c.cursor_offset END,
    delivered_to     = $7,
    delivered_count  = $8,
    acked_count      = CASE WHEN $4 THEN $8::int4 ELSE 0 END,
    retry_count      = CASE WHEN $4 THEN 0 ELSE c.retry_count END,
    delivered_hashes = $9,
    updated_at       = clock_timestamp()
FROM queen.log_partitions p
JOIN queen.queues q ON q.id = p.queue_id
CROSS JOIN (SELECT o.lease_id IS NOT NULL AS expired FROM queen.consumer_cursors o
            WHERE o.partition_id = $5 AND o.consumer_group = $2) e
CROSS JOIN async
WHERE c.partition_id = $5 AND c.consumer_group = $2 AND p.id = $5 AND q.tenant = $1
  AND c.cursor_offset = $6 AND (c.lease_id IS NULL OR c.lease_expires_at <= clock_timestamp())
  AND queen.consumer_option_v2(q.other_options, 'delayedProcessing') = 0
  AND queen.consumer_option_v2(q.other_options, 'windowBuffer') = 0
  AND EXISTS (SELECT 1 FROM queen.log_segments s WHERE s.partition_id = $5 AND s.end_offset = $10)
  AND NOT EXISTS (SELECT 1 FROM queen.log_tombstones t
                  WHERE t.partition_id = $5 AND t.message_offset > $6 AND t.message_offset <= $7)
RETURNING 1::int8, p.name, p.last_offset, c.lease_expires_at, e.expired`

// TailClaim is a delivery of one partition served from the bridge's
// memory, to be claimed for a pop: its tenant, group and lease (unused with
// AutoAck).
type TailClaim struct {
	Tenant  tenancy.TenantID
	Group   string
	Lease   [16]byte
	AutoAck bool

	PartitionID int64
	Cursor, To  int64
	Count       int
	// Hashes are the delivered messages' hash entries, in offset order;
	// the claim records their Digest.
	Hashes []byte
	// FirstEnd is the end offset of the first segment delivered.
	FirstEnd int64
}

// PopTail claims deliveries the bridge serves from memory (popTailSQL, or
// popTailOneSQL for one), of one pop or of several fused. out[i] answers claims[i]: Status
// PopDelivered when it applied (without messages: the caller adds them),
// "" when it did not (nothing was written for it; the pop reads
// PostgreSQL).
func (db *DB) PopTail(ctx context.Context, claims []TailClaim) ([]PopResult, error) {
	sql, args := tailClaimCall(claims, db.arraysOnly)
	return db.popTail(ctx, claims, sql, args)
}

// popTail runs a claim statement (popTailSQL or popTailOneSQL) with its
// arguments and reads its answer.
func (db *DB) popTail(ctx context.Context, claims []TailClaim, sql string, args []any) ([]PopResult, error) {
	n := len(claims)
	out := make([]PopResult, n)
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		rows, err := conn.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var ord int64
			var r PopResult
			var expires pgtype.Timestamptz
			if err := rows.Scan(&ord, &r.Partition, &r.Last, &expires, &r.Expired); err != nil {
				return err
			}
			if ord < 1 || ord > int64(n) || out[ord-1].Status != "" {
				return fmt.Errorf("%w: claim %d answered twice or out of range", ErrBadResult, ord)
			}
			c := claims[ord-1]
			r.Status, r.PartitionID, r.Cursor, r.To, r.LeaseExpires = PopDelivered, c.PartitionID, c.Cursor, c.To, expires.Time
			out[ord-1] = r
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("pgwire: claim of %d deliveries from memory: %w", n, err)
	}
	return out, nil
}

// tailClaimCall is the statement and arguments that apply claims:
// popTailOneSQL for one (unless arraysOnly), popTailSQL otherwise.
func tailClaimCall(claims []TailClaim, arraysOnly bool) (string, []any) {
	if len(claims) == 1 && !arraysOnly {
		c := claims[0]
		return popTailOneSQL, []any{pgtype.UUID{Bytes: c.Tenant, Valid: true}, c.Group, pgtype.UUID{Bytes: c.Lease, Valid: !c.AutoAck}, c.AutoAck,
			c.PartitionID, c.Cursor, c.To, int32(c.Count), Digest(c.Hashes), c.FirstEnd}
	}
	return popTailSQL, tailClaimArgs(claims)
}

// tailClaimArgs are popTailSQL's arguments for claims.
func tailClaimArgs(claims []TailClaim) []any {
	n := len(claims)
	tenants, leases := make([]pgtype.UUID, n), make([]pgtype.UUID, n)
	groups, autos := make([]string, n), make([]bool, n)
	pids, curs, tos, firsts := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	counts, hashes := make([]int32, n), make([][]byte, n)
	for i, c := range claims {
		tenants[i], leases[i] = pgtype.UUID{Bytes: c.Tenant, Valid: true}, pgtype.UUID{Bytes: c.Lease, Valid: !c.AutoAck}
		groups[i], autos[i] = c.Group, c.AutoAck
		pids[i], curs[i], tos[i], firsts[i], counts[i], hashes[i] = c.PartitionID, c.Cursor, c.To, c.FirstEnd, int32(c.Count), Digest(c.Hashes)
	}
	return []any{tenants, groups, leases, autos, pids, curs, tos, counts, hashes, firsts}
}
