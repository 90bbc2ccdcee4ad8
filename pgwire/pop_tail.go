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
var popTailSQL = statement("pop_tail_claim")

// popTailOneSQL is popTailSQL for a call of one claim: the same
// conditions and the same row written, as one UPDATE of the keyed row
// with no arrays, sort or lateral look-up (one row has no lock order to
// keep). PostgreSQL builds a statement's executor for every call, and for
// popTailSQL that is a fifth of the claim's CPU; a lone consumer's claims
// are all of this form. expired reads the row as the statement's snapshot
// found it (a lease released between that read and the UPDATE's re-check
// counts as expired; it only feeds a counter). Parameters: popTailSQL's,
// one value each. Answer: popTailSQL's row, ordinal 1, when it applied.
var popTailOneSQL = statement("pop_tail_claim_one")

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
