package pgwire

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/queenbridge/queenbridge/segment"
)

// knownSQL writes the segments of partitions the caller knows (their id,
// their queue's id, and a probe range that is empty) in one statement,
// without a function call around it: the common bundle of a bridge that is
// its partitions' only writer. docs/write-path.md, "The known-partition
// statement", has its rules; in short:
//
//   - The UPDATE moves a partition's last_offset only where the stored
//     last_offset is at most greatest(verified, txns_start - 1): then the
//     probe range is empty and nothing stored can be a duplicate. Where
//     another writer came in between, the row is left alone and the segment
//     is not written here (the caller sends it through log_push_multi_v2,
//     which probes). The same happens to a segment whose count or hash blob
//     is malformed, or whose partition id does not name that partition of
//     that queue: the general call then fails loudly on it.
//   - Rows are updated, and so locked, in ascending partition id: u is
//     sorted, the bridge's connections may not scan log_partitions
//     sequentially (enable_seqscan = off, pgwire.Open), and every remaining
//     join with u preserves u's order or yields log_partitions in index
//     (id) order. TestKnownStatementLocksInAscendingOrder checks the plan.
//   - The queue's window comes from the partition row's copy of it
//     (migration 0006): the queue row is not read.
//   - The bundle timestamp is taken after the last row lock: the latest
//     clock_timestamp() of the UPDATE's rows (a reads them all before the
//     first segment is inserted), the same for every segment.
//   - Answers, one row per written segment: input ordinal, partition id,
//     base offset, bundle timestamp, the queue's deduplication window.
var knownSQL = BundleTag + " " + statement("push_known_partitions")

// knownOneSQL is knownSQL for a bundle of one segment, with scalar
// parameters: the lone push, where the arrays, the sort and the window
// aggregate would cost more than the rows it writes. Same rules, same answer.
var knownOneSQL = BundleTag + " " + statement("push_known_partition_one")

// knownMarkedSQL is knownSQL for segments that carry the publish relay's
// marks: one more step stores them (the marks of the segments the UPDATE
// wrote: a segment left alone goes to the general call with its marks) in
// the same statement, after its partition's row lock, as pushMarkedSQL
// does. Ordinary bundles never take it.
var knownMarkedSQL = withMarks(knownSQL)

// withMarks adds the marks' upsert to the known-partition statement, as
// the step before its answer.
func withMarks(sql string) string {
	const answer = "\nSELECT a.ord, a.id, a.base"
	if strings.Count(sql, answer) != 1 {
		panic("pgwire: push_known_partitions.sql no longer ends with the answer withMarks expects")
	}
	return strings.Replace(sql, answer, `, m AS (
    INSERT INTO queen.publish_marks AS k (slot, partition_id, lsn, idx)
    SELECT mk.slot, a.id, mk.lsn, mk.idx
    FROM a JOIN unnest($8::int4[], $9::text[], $10::int8[], $11::int4[]) AS mk(ord, slot, lsn, idx) ON mk.ord = a.ord
    ORDER BY a.id, mk.slot
    ON CONFLICT (slot, partition_id) DO UPDATE SET lsn = excluded.lsn, idx = excluded.idx
    WHERE (k.lsn, k.idx) < (excluded.lsn, excluded.idx)
)`+answer, 1)
}

// knownArgs are the parallel arrays of one known-partition statement.
type knownArgs struct {
	ords                 []int // index into the bundle's writes of each segment
	pids, verified, qids []int64
	counts               []int32
	hashes, blobs        [][]byte
	partitions           []string
	// The publish relay's marks, one entry per mark: the segment's
	// ordinal here (from 1), the slot, the position. nil: none.
	markOrds, markIdx []int32
	markSlots         []string
	markLSNs          []int64
}

// known reports whether w can go through the known-partition statement:
// its partition and queue ids are known, and nothing but the range above
// Verified could need a probe (no forgotten range, not a replay), and it
func known(w *segment.Write) bool {
	return w.PartitionID != 0 && w.QueueID != 0 && w.ForgottenHi <= w.ForgottenLo && w.MinWindowSeconds == 0
}

func newKnownArgs(writes []segment.Write, ords []int) *knownArgs {
	n := len(ords)
	a := &knownArgs{
		ords: ords, pids: make([]int64, n), verified: make([]int64, n), qids: make([]int64, n), counts: make([]int32, n),
		hashes: make([][]byte, n), blobs: make([][]byte, n), partitions: make([]string, n),
	}
	for i, o := range ords {
		w := &writes[o]
		a.pids[i], a.verified[i], a.qids[i], a.counts[i] = w.PartitionID, w.Verified, w.QueueID, w.Count
		a.hashes[i], a.blobs[i], a.partitions[i] = w.Hashes, w.Blob, w.Partition
		for _, m := range w.Marks {
			a.markOrds, a.markSlots = append(a.markOrds, int32(i+1)), append(a.markSlots, m.Slot)
			a.markLSNs, a.markIdx = append(a.markLSNs, int64(m.LSN)), append(a.markIdx, m.Index)
		}
	}
	return a
}

// Names under which the statements are prepared on each connection.
const (
	knownStmt       = "queen_known_v1"
	knownOneStmt    = "queen_known_one_v1"
	knownMarkedStmt = "queen_known_marked_v1"
)

// params encodes the statement's parameters in the binary format
// (binary.go), into one buffer.
func (a *knownArgs) params() (name, sql string, values [][]byte) {
	if len(a.ords) == 1 && a.markOrds == nil {
		return knownOneStmt, knownOneSQL, [][]byte{
			int8Bytes(a.pids[0]), int8Bytes(a.verified[0]), int4Bytes(a.counts[0]), a.hashes[0], a.blobs[0],
			int8Bytes(a.qids[0]), []byte(a.partitions[0]),
		}
	}
	size := 7*20 + len(a.ords)*(8*3+4+7*4+len(a.partitions[0]))
	for i := range a.ords {
		size += len(a.hashes[i]) + len(a.blobs[i])
	}
	buf := make([]byte, 0, size)
	values = make([][]byte, 7)
	mark := func(k int, b []byte) []byte { values[k] = b[len(buf):]; buf = b; return b }
	b := buf
	b = mark(0, appendInt8Array(b, a.pids))
	b = mark(1, appendInt8Array(b, a.verified))
	b = mark(2, appendInt4Array(b, a.counts))
	b = mark(3, appendBytesArray(b, oidBytea, a.hashes))
	b = mark(4, appendBytesArray(b, oidBytea, a.blobs))
	b = mark(5, appendInt8Array(b, a.qids))
	b = mark(6, appendBytesArray(b, oidText, a.partitions))
	if a.markOrds == nil {
		return knownStmt, knownSQL, values
	}
	values = append(values, nil, nil, nil, nil)
	b = mark(7, appendInt4Array(b, a.markOrds))
	b = mark(8, appendBytesArray(b, oidText, a.markSlots))
	b = mark(9, appendInt8Array(b, a.markLSNs))
	mark(10, appendInt4Array(b, a.markIdx))
	return knownMarkedStmt, knownMarkedSQL, values
}

// call runs the statement on conn and fills out[ord] for every segment it
// wrote; written[ord] says which. The others were left alone.
func (a *knownArgs) call(ctx context.Context, conn *pgx.Conn, out []segment.Result, written []bool) error {
	name, sql, values := a.params()
	// Prepared once per connection: pgx keeps the description and answers
	// a repeat from its map.
	if _, err := conn.Prepare(ctx, name, sql); err != nil {
		return err
	}
	rr := conn.PgConn().ExecPrepared(ctx, name, values, binaryFormat, binaryFormat)
	var rowErr error
	for rr.NextRow() {
		if rowErr == nil {
			rowErr = a.row(rr.Values(), out, written)
		}
	}
	if _, err := rr.Close(); err != nil {
		return err
	}
	return rowErr
}

// row records one answer row: ordinal, partition id, base offset, bundle
// timestamp, window.
func (a *knownArgs) row(cols [][]byte, out []segment.Result, written []bool) error {
	if len(cols) != 5 {
		return fmt.Errorf("%w: known-partition statement answered %d columns", ErrBadResult, len(cols))
	}
	ord, err := readInt8(cols[0])
	if err != nil {
		return err
	}
	pid, err := readInt8(cols[1])
	if err != nil {
		return err
	}
	base, err := readInt8(cols[2])
	if err != nil {
		return err
	}
	ts, err := readTimestamptz(cols[3])
	if err != nil {
		return err
	}
	if cols[4] == nil {
		return fmt.Errorf("%w: known-partition statement answered segment %d without its window", ErrBadResult, ord)
	}
	win, err := readInt4(cols[4])
	if err != nil {
		return err
	}
	if ord < 1 || int(ord) > len(a.ords) || written[a.ords[ord-1]] {
		return fmt.Errorf("%w: known-partition statement answered segment %d twice or out of range", ErrBadResult, ord)
	}
	o := a.ords[ord-1]
	if pid != a.pids[ord-1] || base < 1 {
		return fmt.Errorf("%w: known-partition statement wrote segment %d to partition %d at %d", ErrBadResult, ord, pid, base)
	}
	written[o] = true
	out[o] = segment.Result{Status: segment.Queued, PartitionID: pid, QueueID: a.qids[ord-1], WindowSeconds: win, CreatedAt: ts, BaseOffset: base}
	return nil
}
