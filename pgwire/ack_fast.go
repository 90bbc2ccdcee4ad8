package pgwire

import (
	"context"
	"crypto/sha256"
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/segment"
)

// WholeAck is a whole-batch acknowledgement: every message a lease
// delivered on one partition, named in offset order, with one status.
type WholeAck struct {
	Tenant tenancy.TenantID
	PID    int64
	Group  string
	Lease  [16]byte
	// Status is completed, failed, dlq or retry (success is completed).
	Status string
	// TransactionIDs in the order they were delivered, all distinct;
	// Errors beside them ("" for none).
	TransactionIDs, Errors []string
}

// WholeAckResult answers one WholeAck.
type WholeAckResult struct {
	// Applied: the acknowledgement matched what the lease delivered and is
	// committed. Otherwise nothing was written for it and it must go
	// through Ack, which answers each item.
	Applied bool
	// DeadLettered: every message went to the dead letters.
	DeadLettered     bool
	Queue, Partition string
	Cursor           int64
}

// Digest is what a claim from the hot tail records of what it delivered:
// the SHA-256 of the hash entries (AckHashes), in place of the entries. It
// is computed here, not in PostgreSQL (whose sha256 goes through OpenSSL
// and costs a pop more than the bytes do), so only the bridge's claims
// (popTailSQL, popTailOneSQL) record it; a pop through PostgreSQL records the entries, and
// an acknowledgement matches either.
func Digest(entries []byte) []byte {
	d := sha256.Sum256(entries)
	return d[:]
}

// AckHashes are the hash entries of transactionIds (16 bytes each, in
// order): what a pop through PostgreSQL records of what it delivered, in
// offset order (migration 0010).
func AckHashes(txids []string) []byte {
	out := make([]byte, 0, len(txids)*segment.HashSize)
	for _, id := range txids {
		x := segment.Hash(id)
		out = append(out, x[:]...)
	}
	return out
}

// wholeAckSQL applies many whole-batch acknowledgements, of any partitions
// and groups, in one statement and one commit: a compare-and-set of each
// cursor row on what its lease delivered (lease, live expiry, nothing
// acknowledged yet, count, and the hash entries or their digest as the pop
// recorded them), with the dead letters written in the same statement. No
// segment is read. docs/consumers.md, "The acknowledgement", has its rules;
// in short:
//
//   - Rows are locked in ascending (partition, group), the one lock order:
//     l is sorted and the lock is taken above the sort (LockRows runs over
//     the sorted rows), so two statements over the same rows wait in the same
//     order. A row another transaction changed is re-checked after the wait
//     (READ COMMITTED): a CAS that no longer holds leaves it out.
//   - The outcome is consumer_ack_v1's for a call naming every delivered
//     message with one status: completed moves the cursor to delivered_to
//     and resets the retry count; retry releases; failed below the queue's
//     retryLimit releases and counts one retry; failed at the limit, and dlq,
//     write every message to the dead letters (at offsets delivered_to - n
//   - i: a delivery is a contiguous run) and move the cursor. Every lease
//     is released.
//   - Rows that do not match are not answered: their acknowledgements go to
//     consumer_ack_v1, which gives each item its exact answer.
//
// Parameters: parallel arrays per acknowledgement (tenant, partition id,
// group, lease, count, hash entries, digest of the entries, status, first
// index into the flat transactionId and error arrays), then those two arrays
// (the transactionIds and errors of the acknowledgements that may dead-letter,
// failed and dlq, alone). Answer, a row per applied acknowledgement: ordinal,
// cursor, dead-lettered, queue, partition.
const wholeAckSQL = wholeAckHeadSQL + `, dl AS (
    INSERT INTO queen.dead_letters (queue_id, partition_id, consumer_group, message_offset, transaction_id, error_message, retry_count)
    SELECT o.qid, o.partition_id, o.consumer_group, o.delivered_to - o.delivered_count + i.i,
           ($10::text[])[o.first + i.i], nullif(($11::text[])[o.first + i.i], ''), o.retry_count
    FROM o CROSS JOIN LATERAL generate_series(1, o.delivered_count) AS i(i)
    WHERE o.dead
    ORDER BY o.partition_id, o.consumer_group, i.i
    ON CONFLICT (partition_id, consumer_group, message_offset) DO NOTHING
)
SELECT u.ord, u.cursor_offset, u.dead, u.qname, u.pname FROM u`

// wholeAckMovesSQL is wholeAckSQL for a call none of whose acknowledgements
// may dead-letter (completed and retry alone): no dead-letter insert, and no
// transactionId or error array to bind.
const wholeAckMovesSQL = wholeAckHeadSQL + `
SELECT u.ord, u.cursor_offset, u.dead, u.qname, u.pname FROM u`

// wholeAckOneSQL is wholeAckMovesSQL for a call of one acknowledgement,
// completed or retry: the same compare-and-set and the same row written,
// as one UPDATE of the keyed row with no arrays, sort or lock before it
// (one row has no lock order to keep; popTailOneSQL says why it pays).
// Parameters: tenant, partition id, group, lease, count, hash entries,
// their digest, status. Answer: wholeAckSQL's row, ordinal 1, when it
// applied.
const wholeAckOneSQL = `/* queen:ack-one */ UPDATE queen.consumer_cursors c SET
    cursor_offset    = CASE WHEN $8 = 'completed' THEN c.delivered_to ELSE c.cursor_offset END,
    acked_count      = CASE WHEN $8 = 'completed' THEN c.delivered_count ELSE c.acked_count END,
    retry_count      = CASE WHEN $8 = 'retry' THEN c.retry_count ELSE 0 END,
    lease_id         = NULL,
    lease_expires_at = NULL,
    updated_at       = clock_timestamp()
FROM queen.log_partitions p
JOIN queen.queues q ON q.id = p.queue_id
WHERE c.partition_id = $2 AND c.consumer_group = $3 AND p.id = $2 AND q.tenant = $1
  AND c.lease_id = $4 AND c.lease_expires_at > clock_timestamp() AND c.acked_count = 0
  AND c.delivered_count = $5 AND c.delivered_hashes IN ($6, $7) AND c.delivered_to - c.cursor_offset = $5
RETURNING 1::int8, c.cursor_offset, false, q.name, p.name`

// wholeAckHeadSQL is what wholeAckSQL and wholeAckMovesSQL share: the
// compare-and-set of the cursor rows.
const wholeAckHeadSQL = `/* queen:ack */ WITH v AS (
    SELECT * FROM unnest($1::uuid[], $2::int8[], $3::text[], $4::uuid[], $5::int4[], $6::bytea[], $7::bytea[], $8::text[], $9::int4[])
        WITH ORDINALITY AS v(tenant, pid, grp, lease, n, hashes, digest, status, first, ord)
), l AS (
    SELECT v.ord, v.status, v.first, c.partition_id, c.consumer_group, c.delivered_to, c.delivered_count, c.retry_count,
           q.id AS qid, q.name AS qname, p.name AS pname,
           queen.consumer_option_v2(q.other_options, 'retryLimit') AS lim
    FROM v JOIN queen.consumer_cursors c ON c.partition_id = v.pid AND c.consumer_group = v.grp
    JOIN queen.log_partitions p ON p.id = v.pid
    JOIN queen.queues q ON q.id = p.queue_id AND q.tenant = v.tenant
    WHERE c.lease_id = v.lease AND c.lease_expires_at > clock_timestamp() AND c.acked_count = 0
      AND c.delivered_count = v.n AND c.delivered_hashes IN (v.digest, v.hashes) AND c.delivered_to - c.cursor_offset = v.n
    ORDER BY c.partition_id, c.consumer_group
    FOR UPDATE OF c
), o AS (
    SELECT l.*, l.status IN ('completed', 'dlq') OR (l.status = 'failed' AND l.retry_count >= l.lim) AS moves,
           l.status = 'dlq' OR (l.status = 'failed' AND l.retry_count >= l.lim) AS dead
    FROM l
), u AS (
    UPDATE queen.consumer_cursors c SET
        cursor_offset    = CASE WHEN o.moves THEN o.delivered_to ELSE c.cursor_offset END,
        acked_count      = CASE WHEN o.moves THEN o.delivered_count ELSE c.acked_count END,
        retry_count      = CASE WHEN o.status = 'failed' AND NOT o.moves THEN c.retry_count + 1
                                WHEN o.status = 'retry' THEN c.retry_count ELSE 0 END,
        lease_id         = NULL,
        lease_expires_at = NULL,
        updated_at       = clock_timestamp()
    FROM o
    WHERE c.partition_id = o.partition_id AND c.consumer_group = o.consumer_group
    RETURNING o.ord, c.cursor_offset, o.dead, o.qname, o.pname
)`

// AckWhole applies whole-batch acknowledgements in one statement and one
// commit (wholeAckSQL; wholeAckMovesSQL when none may dead-letter, and
// wholeAckOneSQL for one of those alone). out[i] answers acks[i]; one not
// Applied wrote nothing and goes through Ack.
func (db *DB) AckWhole(ctx context.Context, acks []WholeAck) ([]WholeAckResult, error) {
	sql, args := wholeAckCall(acks, db.arraysOnly)
	return db.ackWhole(ctx, acks, sql, args)
}

// ackWhole runs a whole-batch acknowledgement statement with its arguments
// and reads its answer.
func (db *DB) ackWhole(ctx context.Context, acks []WholeAck, sql string, args []any) ([]WholeAckResult, error) {
	n := len(acks)
	out := make([]WholeAckResult, n)
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		rows, err := conn.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var ord int64
			var r WholeAckResult
			if err := rows.Scan(&ord, &r.Cursor, &r.DeadLettered, &r.Queue, &r.Partition); err != nil {
				return err
			}
			if ord < 1 || ord > int64(n) || out[ord-1].Applied {
				return fmt.Errorf("%w: whole-batch acknowledgement %d answered twice or out of range", ErrBadResult, ord)
			}
			r.Applied = true
			out[ord-1] = r
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("pgwire: whole-batch acknowledgements (%d): %w", n, err)
	}
	return out, nil
}

// wholeAckCall is the statement and arguments that apply acks: wholeAckSQL
// when one of them may dead-letter, wholeAckOneSQL for one that may not
// (unless arraysOnly), wholeAckMovesSQL otherwise.
func wholeAckCall(acks []WholeAck, arraysOnly bool) (string, []any) {
	if len(acks) == 1 && !arraysOnly && (acks[0].Status == "completed" || acks[0].Status == "retry") {
		a := acks[0]
		entries := AckHashes(a.TransactionIDs)
		return wholeAckOneSQL, []any{pgtype.UUID{Bytes: a.Tenant, Valid: true}, a.PID, a.Group, pgtype.UUID{Bytes: a.Lease, Valid: true},
			int32(len(a.TransactionIDs)), entries, Digest(entries), a.Status}
	}
	n := len(acks)
	tenants, leases := make([]pgtype.UUID, n), make([]pgtype.UUID, n)
	pids, groups, statuses := make([]int64, n), make([]string, n), make([]string, n)
	counts, firsts := make([]int32, n), make([]int32, n)
	hashes, digests := make([][]byte, n), make([][]byte, n)
	var txids, errs []string
	mayDie := false
	for i, a := range acks {
		entries := AckHashes(a.TransactionIDs)
		tenants[i], pids[i], groups[i] = pgtype.UUID{Bytes: a.Tenant, Valid: true}, a.PID, a.Group
		leases[i], counts[i], hashes[i], digests[i] = pgtype.UUID{Bytes: a.Lease, Valid: true}, int32(len(a.TransactionIDs)), entries, Digest(entries)
		statuses[i], firsts[i] = a.Status, int32(len(txids))
		if a.Status != "failed" && a.Status != "dlq" {
			continue // never dead-letters: its ids are not needed
		}
		mayDie = true
		txids = append(txids, a.TransactionIDs...)
		for k := range a.TransactionIDs {
			e := ""
			if k < len(a.Errors) {
				e = a.Errors[k]
			}
			errs = append(errs, e)
		}
	}
	args := []any{tenants, pids, groups, leases, counts, hashes, digests, statuses, firsts}
	if !mayDie {
		return wholeAckMovesSQL, args
	}
	return wholeAckSQL, append(args, txids, errs)
}
