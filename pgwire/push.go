package pgwire

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/segment"
)

// BundleTag opens the text of every statement a bundle sends (pushSQL,
// knownSQL, knownOneSQL). PostgreSQL keeps a leading comment in the text it
// shows (pg_stat_activity.query, for a prepared statement too, and
// pg_stat_statements), so a bundle call can be found there whichever path
// it took: `query LIKE '/* queen:bundle */%'`.
const BundleTag = "/* queen:bundle */"

// pushSQL is prepared once per connection and cached by pgx (its default
// statement-cache mode), so the hot path sends only Bind/Execute.
const pushSQL = BundleTag + ` SELECT o_pids, o_wins, o_bases, o_ts, o_dup_segs, o_dup_idx, o_dup_offs, o_qids
FROM queen.log_push_multi_v2($1::text[], $2::text[], $3::int4[], $4::bytea[], $5::int8[], $6::bytea[], $7::uuid[], $8::int4[], $9::int8[], $10::int8[], $11::int8[])`

// pushMarkedSQL is pushSQL for a bundle that carries publish relay marks
// (segment.Write.Marks): the same call, and in the same statement, so in
// the same transaction, the marks of the segments it stored (base offset >
// 0; a duplicate segment wrote nothing, so it moves no mark). A mark row
// belongs to a partition whose row lock the call holds (every writer of it
// holds that lock first), so the upserts take no lock out of order. A mark
// never moves back. Ordinary pushes never take it: their statement is
// pushSQL, unchanged.
const pushMarkedSQL = BundleTag + ` WITH r AS MATERIALIZED (SELECT o_pids, o_wins, o_bases, o_ts, o_dup_segs, o_dup_idx, o_dup_offs, o_qids
FROM queen.log_push_multi_v2($1::text[], $2::text[], $3::int4[], $4::bytea[], $5::int8[], $6::bytea[], $7::uuid[], $8::int4[], $9::int8[], $10::int8[], $11::int8[])),
m AS (INSERT INTO queen.publish_marks AS k (slot, partition_id, lsn, idx)
	SELECT u.slot, r.o_pids[u.ord], u.lsn, u.idx
	FROM r, unnest($12::int4[], $13::text[], $14::int8[], $15::int4[]) AS u(ord, slot, lsn, idx)
	WHERE r.o_bases[u.ord] > 0
	ORDER BY r.o_pids[u.ord], u.slot
	ON CONFLICT (slot, partition_id) DO UPDATE SET lsn = excluded.lsn, idx = excluded.idx
	WHERE (k.lsn, k.idx) < (excluded.lsn, excluded.idx))
SELECT o_pids, o_wins, o_bases, o_ts, o_dup_segs, o_dup_idx, o_dup_offs, o_qids FROM r`

// bundleArgs are the typed parallel arrays of one call.
type bundleArgs struct {
	queues, partitions []string
	counts             []int32
	hashes, blobs      [][]byte
	verified           []int64
	tenants            []pgtype.UUID // nil: every segment is the default tenant
	minWindows         []int32       // nil: no segment widens its probe
	pids               []int64       // nil: no partition id is known
	forgotLo, forgotHi []int64       // nil: no segment has a forgotten range
	// The publish relay's marks, one entry per mark: the segment's
	// ordinal (from 1), the slot, the position. nil: none (pushSQL).
	markOrds, markIdx []int32
	markSlots         []string
	markLSNs          []int64
}

func newBundleArgs(writes []segment.Write) *bundleArgs {
	n := len(writes)
	a := &bundleArgs{
		queues: make([]string, n), partitions: make([]string, n), counts: make([]int32, n),
		hashes: make([][]byte, n), blobs: make([][]byte, n), verified: make([]int64, n),
	}
	for i := range writes {
		w := &writes[i]
		a.queues[i], a.partitions[i], a.counts[i] = w.Queue, w.Partition, w.Count
		a.hashes[i], a.blobs[i], a.verified[i] = w.Hashes, w.Blob, w.Verified
		if w.Tenant != (tenancy.TenantID{}) && a.tenants == nil {
			a.tenants = make([]pgtype.UUID, n)
			for j := range a.tenants {
				a.tenants[j] = pgtype.UUID{Bytes: writes[j].Tenant, Valid: true}
			}
		}
		if w.MinWindowSeconds != 0 && a.minWindows == nil {
			a.minWindows = make([]int32, n)
			for j := range a.minWindows {
				a.minWindows[j] = writes[j].MinWindowSeconds
			}
		}
		if w.ForgottenHi > w.ForgottenLo && a.forgotLo == nil {
			a.forgotLo, a.forgotHi = make([]int64, n), make([]int64, n)
			for j := range a.forgotLo {
				a.forgotLo[j], a.forgotHi[j] = writes[j].ForgottenLo, writes[j].ForgottenHi
			}
		}
		for _, m := range w.Marks {
			a.markOrds, a.markSlots = append(a.markOrds, int32(i+1)), append(a.markSlots, m.Slot)
			a.markLSNs, a.markIdx = append(a.markLSNs, int64(m.LSN)), append(a.markIdx, m.Index)
		}
		if w.PartitionID != 0 && a.pids == nil {
			a.pids = make([]int64, n)
			for j := range a.pids {
				a.pids[j] = writes[j].PartitionID
			}
		}
	}
	return a
}

// wireResults are log_push_multi_v2's typed result arrays.
type wireResults struct {
	pids, bases     []int64
	qids            []int64
	wins            []int32
	ts              time.Time
	dupSegs, dupIdx []int32
	dupOffs         []int64
}

// PushBundle writes every segment of writes and returns one result per
// write, in input order. The writes must name distinct partitions (fusion's
// in-flight gate guarantees it).
//
// Segments of partitions the caller knows, whose probe range is empty, go
// through the known-partition statement (knownSQL): the common bundle, at
// about the cost of the rows it writes. The others (new partitions, probes,
// replays, forgotten ranges), and any the statement left alone because
// another writer came in between, go through log_push_multi_v2 in a
// transaction of their own. When one of the two fails after the other
// committed, the error is returned as that part's Failed results; an error
// is returned only when nothing is known written.
func (db *DB) PushBundle(ctx context.Context, writes []segment.Write) ([]segment.Result, error) {
	if len(writes) == 0 {
		return nil, nil
	}
	if err := distinctPartitions(writes); err != nil {
		return nil, err
	}
	out := make([]segment.Result, len(writes))
	written := make([]bool, len(writes))
	var fast []int
	for i := range writes {
		if known(&writes[i]) {
			fast = append(fast, i)
		}
	}
	var fastErr, restErr error
	if len(fast) > 0 {
		fastErr = db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
			return newKnownArgs(writes, fast).call(ctx, conn.Conn(), out, written)
		})
		if fastErr != nil {
			fastErr = fmt.Errorf("pgwire: known-partition bundle (%d segments): %w", len(fast), fastErr)
			clear(written)
		}
	}
	fastWrote := 0
	for _, ok := range written {
		if ok {
			fastWrote++
		}
	}
	rest := make([]int, 0, len(writes)-fastWrote)
	for i := range writes {
		if !written[i] && !(fastErr != nil && known(&writes[i])) {
			rest = append(rest, i)
		}
	}
	if len(rest) > 0 {
		restErr = db.pushGeneral(ctx, writes, rest, out, written)
	}
	switch {
	case fastErr != nil && (restErr != nil || len(rest) == 0):
		return nil, fastErr
	case restErr != nil && fastWrote == 0:
		return nil, restErr
	}
	for i := range out {
		switch {
		case written[i]:
		case fastErr != nil:
			out[i] = segment.Result{Status: segment.Failed, Err: fastErr}
		default:
			out[i] = segment.Result{Status: segment.Failed, Err: restErr}
		}
	}
	return out, nil
}

// pushGeneral writes writes[ords] through log_push_multi_v2 in one
// transaction and fills their results.
func (db *DB) pushGeneral(ctx context.Context, writes []segment.Write, ords []int, out []segment.Result, written []bool) error {
	sub := writes
	if len(ords) != len(writes) {
		sub = make([]segment.Write, len(ords))
		for i, o := range ords {
			sub[i] = writes[o]
		}
	}
	a := newBundleArgs(sub)
	var w wireResults
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) (err error) {
		w, err = a.call(ctx, conn)
		return err
	})
	if err != nil {
		return fmt.Errorf("pgwire: log_push_multi_v2 (%d segments): %w", len(sub), err)
	}
	res, err := w.results(len(sub))
	if err != nil {
		return fmt.Errorf("pgwire: log_push_multi_v2 (%d segments): %w", len(sub), err)
	}
	for i, o := range ords {
		out[o], written[o] = res[i], true
	}
	return nil
}

// distinctPartitions refuses a bundle that names one partition twice: one
// allocation per partition per bundle is what keeps offsets in commit order.
func distinctPartitions(writes []segment.Write) error {
	if len(writes) < 2 {
		return nil
	}
	type key struct {
		tenant           tenancy.TenantID
		queue, partition string
	}
	seen := make(map[key]struct{}, len(writes))
	for i := range writes {
		k := key{writes[i].Tenant, writes[i].Queue, writes[i].Partition}
		if _, dup := seen[k]; dup {
			return fmt.Errorf("pgwire: bundle names partition %q of queue %q twice: one segment per partition per bundle", k.partition, k.queue)
		}
		seen[k] = struct{}{}
	}
	return nil
}

// querier runs the bundle statements: a pooled connection, or a plain one
// (the backend-CPU benchmark).
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// call runs log_push_multi_v2 with a's arrays on q.
func (a *bundleArgs) call(ctx context.Context, q querier) (wireResults, error) {
	var w wireResults
	var row pgx.Row
	if a.markOrds == nil {
		row = q.QueryRow(ctx, pushSQL, a.queues, a.partitions, a.counts, a.hashes, a.verified, a.blobs, a.tenants, a.minWindows, a.pids, a.forgotLo, a.forgotHi)
	} else {
		row = q.QueryRow(ctx, pushMarkedSQL, a.queues, a.partitions, a.counts, a.hashes, a.verified, a.blobs, a.tenants, a.minWindows, a.pids, a.forgotLo, a.forgotHi,
			a.markOrds, a.markSlots, a.markLSNs, a.markIdx)
	}
	err := row.Scan(&w.pids, &w.wins, &w.bases, &w.ts, &w.dupSegs, &w.dupIdx, &w.dupOffs, &w.qids)
	return w, err
}

// results turns the arrays into one Result per segment, checking that they
// are well formed: every segment either queued (base > 0, no duplicate
// frames) or duplicate (base 0, at least one).
func (w *wireResults) results(n int) ([]segment.Result, error) {
	if len(w.pids) != n || len(w.wins) != n || len(w.bases) != n || len(w.qids) != n {
		return nil, fmt.Errorf("%w: %d/%d/%d/%d results for %d segments", ErrBadResult, len(w.pids), len(w.wins), len(w.bases), len(w.qids), n)
	}
	if len(w.dupIdx) != len(w.dupSegs) || len(w.dupOffs) != len(w.dupSegs) {
		return nil, fmt.Errorf("%w: misaligned duplicate arrays", ErrBadResult)
	}
	out := make([]segment.Result, n)
	for i := range out {
		out[i] = segment.Result{PartitionID: w.pids[i], QueueID: w.qids[i], WindowSeconds: w.wins[i], CreatedAt: w.ts, BaseOffset: w.bases[i]}
	}
	for k, s := range w.dupSegs {
		if s < 1 || int(s) > n || w.bases[s-1] != 0 {
			return nil, fmt.Errorf("%w: duplicate frame names segment %d", ErrBadResult, s)
		}
		r := &out[s-1]
		r.Dups = append(r.Dups, segment.Dup{Index: int(w.dupIdx[k]), Offset: w.dupOffs[k]})
	}
	for i := range out {
		r := &out[i]
		switch {
		case r.BaseOffset > 0 && len(r.Dups) == 0:
			r.Status = segment.Queued
		case r.BaseOffset == 0 && len(r.Dups) > 0:
			r.Status = segment.Duplicate
		default:
			return nil, fmt.Errorf("%w: result %d is neither queued nor duplicate", ErrBadResult, i)
		}
	}
	return out, nil
}
