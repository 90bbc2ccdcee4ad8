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
var wholeAckSQL = wholeAckHeadSQL + statement("ack_whole_dead_letters")

// wholeAckMovesSQL is wholeAckSQL for a call none of whose acknowledgements
// may dead-letter (completed and retry alone): no dead-letter insert, and no
// transactionId or error array to bind.
var wholeAckMovesSQL = wholeAckHeadSQL + `
SELECT u.ord, u.cursor_offset, u.dead, u.qname, u.pname FROM u`

// wholeAckOneSQL is wholeAckMovesSQL for a call of one acknowledgement,
// completed or retry: the same compare-and-set and the same row written,
// as one UPDATE of the keyed row with no arrays, sort or lock before it
// (one row has no lock order to keep; popTailOneSQL says why it pays).
// Parameters: tenant, partition id, group, lease, count, hash entries,
// their digest, status. Answer: wholeAckSQL's row, ordinal 1, when it
// applied.
var wholeAckOneSQL = statement("ack_whole_one")

// wholeAckHeadSQL is what wholeAckSQL and wholeAckMovesSQL share: the
// compare-and-set of the cursor rows.
var wholeAckHeadSQL = statement("ack_whole_head")

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
