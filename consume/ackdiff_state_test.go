package consume

import (
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5/pgtype"
)

// What the differential test compares after every step: the two groups'
// cursor rows and dead letters, read from the database.

// cursorRow is what the two sides' cursor rows must agree on (all but the
// lease ids and times).
type cursorRow struct {
	cursor, to                int64
	held, live                bool
	delivered, acked, retries int32
	digest                    string // "" for none
}

// cursors reads a group's cursor rows of the run's queue, and the lease
// each holds.
func (r *diffRun) cursors(group string) (map[int64]cursorRow, map[int64][16]byte) {
	r.t.Helper()
	rows, err := r.db.Pool().Query(r.ctx, `SELECT c.partition_id, c.cursor_offset, c.lease_id IS NOT NULL,
			coalesce(c.lease_expires_at > clock_timestamp(), false), c.delivered_to, c.delivered_count, c.acked_count,
			c.retry_count, c.delivered_hashes, c.lease_id
		FROM queen.consumer_cursors c JOIN queen.log_partitions p ON p.id = c.partition_id JOIN queen.queues q ON q.id = p.queue_id
		WHERE q.name = $1 AND q.tenant = $2 AND c.consumer_group = $3`, r.queue, pgtype.UUID{Bytes: diffTenant, Valid: true}, group)
	if err != nil {
		r.fatalf("cursor rows: %v", err)
	}
	defer rows.Close()
	out, leases := map[int64]cursorRow{}, map[int64][16]byte{}
	for rows.Next() {
		var pid int64
		var c cursorRow
		var digest []byte
		var lease pgtype.UUID
		if err := rows.Scan(&pid, &c.cursor, &c.held, &c.live, &c.to, &c.delivered, &c.acked, &c.retries, &digest, &lease); err != nil {
			r.fatalf("cursor rows: %v", err)
		}
		c.digest = fmt.Sprintf("%x", digest)
		out[pid], leases[pid] = c, lease.Bytes
	}
	if err := rows.Err(); err != nil {
		r.fatalf("cursor rows: %v", err)
	}
	return out, leases
}

// deadLetters lists a group's dead letters of the run's queue.
func (r *diffRun) deadLetters(group string) []string {
	r.t.Helper()
	rows, err := r.db.Pool().Query(r.ctx, `SELECT d.partition_id, d.message_offset, d.transaction_id, coalesce(d.error_message, '<null>'), d.retry_count
		FROM queen.dead_letters d JOIN queen.queues q ON q.id = d.queue_id
		WHERE q.name = $1 AND q.tenant = $2 AND d.consumer_group = $3 ORDER BY 1, 2`, r.queue, pgtype.UUID{Bytes: diffTenant, Valid: true}, group)
	if err != nil {
		r.fatalf("dead letters: %v", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var pid, off int64
		var tx, msg string
		var retries int32
		if err := rows.Scan(&pid, &off, &tx, &msg, &retries); err != nil {
			r.fatalf("dead letters: %v", err)
		}
		out = append(out, fmt.Sprintf("%d@%d %s %q retries %d", pid, off, tx, msg, retries))
	}
	if err := rows.Err(); err != nil {
		r.fatalf("dead letters: %v", err)
	}
	return out
}

// compare checks that the two groups' cursor rows and dead letters agree,
// and keeps the fast side's rows for the next step's expectations.
func (r *diffRun) compare() {
	r.t.Helper()
	fast, leases := r.cursors(r.sides[0].group)
	general, _ := r.cursors(r.sides[1].group)
	for _, pid := range sortedKeys(fast, general) {
		if f, g := fast[pid], general[pid]; f != g {
			r.fatalf("cursor rows of partition %d differ:\nfast    %+v\ngeneral %+v", pid, f, g)
		}
	}
	if f, g := r.deadLetters(r.sides[0].group), r.deadLetters(r.sides[1].group); !slices.Equal(f, g) {
		r.fatalf("dead letters differ:\nfast    %q\ngeneral %q", f, g)
	}
	for _, c := range fast {
		if c.held && c.digest == "" {
			r.cov.add("a delivery without hash entries") // cut by maxBytes: its acknowledgements take the general path
		}
	}
	r.rows, r.rowLeases = fast, leases
}

func sortedKeys(a, b map[int64]cursorRow) []int64 {
	var out []int64
	for k := range a {
		out = append(out, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
