package pgwire_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/queenbridge/queenbridge/storage"
)

func deleteMessage(t *testing.T, db *pgwire.DB, pid int64, txid string) bool {
	t.Helper()
	ok, err := db.DeleteMessage(context.Background(), [16]byte{}, pid, txid)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// deliveredRow is what the group's cursor row recorded of its delivery.
func deliveredRow(t *testing.T, db *pgwire.DB, pid int64, group string) string {
	t.Helper()
	var s string
	if err := db.Pool().QueryRow(context.Background(), `SELECT concat_ws('|', cursor_offset, delivered_to, delivered_count,
		coalesce(encode(delivered_hashes, 'hex'), '-'), coalesce(lease_id::text, '-'))
		FROM queen.consumer_cursors WHERE partition_id = $1 AND consumer_group = $2`, pid, group).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// A tombstone: the message is found no more, and every pop path and the
// offset read skip it as they skip an offset retention removed, while the
// offsets around it stay where they are. A delivery with a hole records
// what it delivered without the hole and without hash entries, so its
// whole-batch acknowledgement takes the general path and is accepted
// there as whole. A range of tombstones alone is stepped over.
func TestTombstonesAreSkipped(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	res := push(t, db, write("tomb.q", "p", "a", "b", "c", "d", "e", "f")) // 1..6
	pid := res[0].PartitionID
	if _, ok, _ := db.FindMessage(ctx, [16]byte{}, pid, "c"); !ok {
		t.Fatal("c is not found before its delete")
	}
	if !deleteMessage(t, db, pid, "c") {
		t.Fatal("delete c: not found")
	}
	for _, tx := range []string{"c", "zz"} {
		if deleteMessage(t, db, pid, tx) {
			t.Fatalf("delete %s: deleted", tx)
		}
		if _, ok, err := db.FindMessage(ctx, [16]byte{}, pid, tx); ok || err != nil {
			t.Fatalf("%s found after its delete (%v)", tx, err)
		}
	}
	if ok, err := db.DeleteMessage(ctx, tenancy.TenantID(uuid.New()), pid, "d"); ok || err != nil {
		t.Fatalf("another tenant's delete: %v %v", ok, err)
	}
	if m, ok, err := db.FindMessage(ctx, [16]byte{}, pid, "d"); !ok || err != nil || m.Message.Offset != 4 || m.Partition.Queue != "tomb.q" {
		t.Fatalf("d: %+v %v %v", m, ok, err)
	}

	// The first pop of a group (consumer_pop_v1).
	l := lease()
	r := pop(t, db, pgwire.PopRequest{Queue: "tomb.q", Partition: "p", Group: "g1", Lease: l, Batch: 10})
	if fmt.Sprint(txids(r.Messages)) != "[a b d e f]" || r.Cursor != 0 || r.To != 6 {
		t.Fatalf("first pop: %+v", r)
	}
	if got := deliveredRow(t, db, pid, "g1"); !strings.HasPrefix(got, "0|6|5|-|") {
		t.Fatalf("g1's row after the pop: %s, want 5 delivered to 6 without hash entries", got)
	}
	whole, err := db.AckWhole(ctx, []pgwire.WholeAck{{PID: pid, Group: "g1", Lease: l, Status: "completed",
		TransactionIDs: txids(r.Messages), Errors: make([]string, 5)}})
	if err != nil || whole[0].Applied {
		t.Fatalf("whole-batch ack of a delivery with a hole: %+v %v", whole, err)
	}
	if a := ack(t, db, pid, "g1", &l, completed(txids(r.Messages)...)...); !a.Released || a.Cursor != 6 || strings.Join(a.Errs, "") != "" {
		t.Fatalf("the general path's ack of the whole delivery: %+v", a)
	}

	// The one-statement pop (by id, cursor row present).
	l = lease()
	r = pop(t, db, pgwire.PopRequest{Queue: "tomb.q", Partition: "p", Group: "g2", Lease: l, Batch: 1})
	if a := ack(t, db, pid, "g2", &l, completed(txids(r.Messages)...)...); a.Cursor != 1 {
		t.Fatalf("g2 seeded: %+v", a)
	}
	l = lease()
	r = pop(t, db, pgwire.PopRequest{PartitionID: pid, Group: "g2", Lease: l, Batch: 4})
	if fmt.Sprint(txids(r.Messages)) != "[b d e]" || r.Cursor != 1 || r.To != 5 {
		t.Fatalf("pop by id: %+v", r)
	}
	if got := deliveredRow(t, db, pid, "g2"); !strings.HasPrefix(got, "1|5|3|-|") {
		t.Fatalf("g2's row after the pop: %s", got)
	}
	// A copy delivered before its delete can still be acknowledged.
	if !deleteMessage(t, db, pid, "e") {
		t.Fatal("delete e")
	}
	if a := ack(t, db, pid, "g2", &l, completed("b", "d", "e")...); !a.Released || a.Cursor != 5 || strings.Join(a.Errs, "") != "" {
		t.Fatalf("ack after e's delete: %+v", a)
	}

	// Tombstones alone: g h are deleted, i is not; a pop of 2 from after f
	// steps over g h and delivers i, once (auto-ack, both paths).
	push(t, db, write("tomb.q", "p", "g", "h"), write("tomb.q", "p2", "x"))
	push(t, db, write("tomb.q", "p", "i"))
	deleteMessage(t, db, pid, "g")
	deleteMessage(t, db, pid, "h")
	for _, req := range []pgwire.PopRequest{{PartitionID: pid, Group: "g1", AutoAck: true, Batch: 2},
		{Queue: "tomb.q", Partition: "p", Group: "g3", AutoAck: true, Batch: 5}} {
		if req.Group == "g3" { // from after f, by name: consumer_pop_v1
			pop(t, db, pgwire.PopRequest{Queue: "tomb.q", Partition: "p", Group: "g3", AutoAck: true, Batch: 6})
		}
		r = pop(t, db, req)
		if fmt.Sprint(txids(r.Messages)) != "[i]" || r.To != 9 {
			t.Fatalf("pop over tombstones alone (%+v): %+v", req, r)
		}
		if r = pop(t, db, req); r.Status != pgwire.PopEmpty || r.Cursor != 9 {
			t.Fatalf("pop after: %+v", r)
		}
	}

	// The offset read.
	msgs, err := db.ReadMessages(ctx, [16]byte{}, "tomb.q", "p", 1, 100, 1<<20)
	if err != nil || fmt.Sprint(txids(msgs)) != "[a b d f i]" {
		t.Fatalf("read: %v %v", txids(msgs), err)
	}
	for from, want := range map[int64]string{3: "[d]", 5: "[f]", 7: "[i]"} {
		msgs, err := db.ReadMessages(ctx, [16]byte{}, "tomb.q", "p", from, 1, 1<<20)
		if err != nil || fmt.Sprint(txids(msgs)) != want {
			t.Fatalf("read 1 from %d: %v %v, want %s", from, txids(msgs), err, want)
		}
	}

	// The transactionId stays known to deduplication.
	again := push(t, db, write("tomb.q", "p", "c"))
	if again[0].Status != segment.Duplicate {
		t.Fatalf("c pushed again: %+v", again[0])
	}
}

// A delete removes the message's dead letters, and the dead-letter list
// leaves out one written later by a copy delivered before the delete.
func TestTombstonesLeaveTheDeadLetters(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	pid := push(t, db, write("tomb.dl", "p", "a", "b"))[0].PartitionID
	for _, g := range []string{"g1", "g2"} {
		l := lease()
		r := pop(t, db, pgwire.PopRequest{Queue: "tomb.dl", Partition: "p", Group: g, Lease: l, Batch: 10})
		if g == "g2" {
			deleteMessage(t, db, pid, "a") // g2 holds its copy of a
		}
		a := ack(t, db, pid, g, &l, pgwire.AckItem{TransactionID: "a", Status: "dlq"}, pgwire.AckItem{TransactionID: "b", Status: "dlq"})
		if strings.Join(a.Errs, "") != "" || len(r.Messages) == 0 {
			t.Fatalf("%s: dlq: %+v", g, a)
		}
		if g == "g1" {
			dls, total, err := db.DeadLetters(ctx, [16]byte{}, "tomb.dl", "", 10, 0)
			if err != nil || total != 2 || len(dls) != 2 {
				t.Fatalf("dead letters before the delete: %d %+v %v", total, dls, err)
			}
		}
	}
	dls, total, err := db.DeadLetters(ctx, [16]byte{}, "tomb.dl", "", 10, 0)
	if err != nil || total != 2 || len(dls) != 2 || dls[0].TransactionID != "b" || dls[1].TransactionID != "b" {
		t.Fatalf("dead letters after a's delete: %d %+v %v", total, dls, err)
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.dead_letters WHERE message_offset = 1 AND consumer_group = 'g1'`); n != 0 {
		t.Fatalf("%d dead letters of g1 left for a", n)
	}
}

// Every pop path probes the tombstones of the range it delivers through
// the primary key; on a partition without tombstones the probe returns
// nothing, and no path reads the table any other way.
func TestPopsProbeTombstonesByTheIndex(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	f := newTailFixture(t, db, "probe.q")
	conn, err := db.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	// Both ends of the range bound the index scan (a bound left as a
	// filter would read every tombstone after the cursor).
	probe := regexp.MustCompile(`Index (Only )?Scan using log_tombstones_pkey on log_tombstones t \(actual rows=0 loops=1\)\n\s+` +
		`Index Cond: \(\(partition_id = [^)]+\) AND \(message_offset > [^)]+\) AND \(message_offset <= [^)]+\)\)`)
	explain := func(name, prepare, execute string) {
		t.Helper()
		if _, err := conn.Exec(ctx, "PREPARE "+name+" AS "+prepare); err != nil {
			t.Fatal(err)
		}
		text := strings.Join(textRows(t, conn, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE "+name+execute), "\n")
		t.Logf("%s:\n%s", name, text)
		if !probe.MatchString(text) || strings.Count(text, "on log_tombstones") != 1 {
			t.Fatalf("%s does not probe log_tombstones by its key alone, finding nothing", name)
		}
	}
	explain("tail_claim", pgwire.PopTailSQL, fmt.Sprintf(`('{00000000-0000-0000-0000-000000000000}', '{g}', '{%s}', '{false}',
		'{%d}', '{1}', '{6}', '{5}', '{"\\x%x"}', '{3}')`, uuid.New(), f.pid, f.claim.Hashes))
	if a := ack(t, db, f.pid, "g", nil, completed("a", "b", "c", "d", "e")...); a.Cursor != 6 {
		t.Fatalf("ack: %+v", a)
	}
	push(t, db, write("probe.q", "p", "f", "g"))
	explain("pop_known", pgwire.PopKnownSQL, fmt.Sprintf(`(%d, '00000000-0000-0000-0000-000000000000', 'g', '%s', 10, false)`, f.pid, uuid.New()))
}

// Retention removes the tombstones of the offsets whose segments it
// removes, and keeps the others.
func TestRetentionRemovesTombstonesWithTheirSegments(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	pid := push(t, db, write("tomb.ret", "p", "a", "b"))[0].PartitionID
	push(t, db, write("tomb.ret", "p", "c", "d"))
	for _, tx := range []string{"a", "d"} {
		if !deleteMessage(t, db, pid, tx) {
			t.Fatalf("delete %s", tx)
		}
	}
	if _, err := db.ConfigureQueue(ctx, [16]byte{}, "tomb.ret", storage.QueueUpdate{RetentionSeconds: ptr32(60), DedupWindowSeconds: ptr32(0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool().Exec(ctx, `UPDATE queen.log_segments SET created_at = created_at - interval '2 minutes'
		WHERE partition_id = $1 AND end_offset <= 2`, pid); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RetentionStep(ctx, 64, 1000); err != nil {
		t.Fatal(err)
	}
	if got := count(t, db.Pool(), `SELECT coalesce(sum(message_offset), 0) FROM queen.log_tombstones WHERE partition_id = $1`, pid); got != 4 {
		t.Fatalf("tombstones left sum to offset %d, want only d's (4)", got)
	}
	msgs, err := db.ReadMessages(ctx, [16]byte{}, "tomb.ret", "p", 1, 10, 1<<20)
	if err != nil || fmt.Sprint(txids(msgs)) != "[c]" {
		t.Fatalf("read after retention: %v %v", txids(msgs), err)
	}
}

// A pop that steps over a range of tombstones moves the cursor past the
// messages whose failures the retry count counted, so it starts the count
// again, as an acknowledgement that moves the cursor does: the next
// message's first failure is retried, not sent to the dead letters. The
// same on both pop statements, with a lease or auto-acknowledging.
func TestSteppingOverTombstonesStartsTheRetriesAgain(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	paths := map[string]func(pgwire.PopRequest) (pgwire.PopResult, []int64, error){
		"consumer_pop_v1": func(req pgwire.PopRequest) (pgwire.PopResult, []int64, error) { return db.PopFunctionOnce(ctx, req) },
		"popKnownSQL": func(req pgwire.PopRequest) (pgwire.PopResult, []int64, error) {
			res, gone, general, err := db.PopKnownOnce(ctx, req)
			if general {
				err = fmt.Errorf("popKnownSQL sent the pop to consumer_pop_v1")
			}
			return res, gone, err
		},
	}
	for name, stepOver := range paths {
		for _, auto := range []bool{false, true} {
			queue := fmt.Sprintf("tomb.retry.%s.%v", name, auto)
			setOptions(t, db, queue, map[string]any{"retryLimit": 1})
			pid := push(t, db, write(queue, "p", "a", "b"))[0].PartitionID
			l := lease()
			if r := pop(t, db, pgwire.PopRequest{PartitionID: pid, Group: "g", Lease: l}); len(r.Messages) != 2 {
				t.Fatalf("%s: the first pop: %+v", queue, r)
			}
			if a := ack(t, db, pid, "g", &l, pgwire.AckItem{TransactionID: "a", Status: "failed"}); !a.Released || a.DLQ[0] {
				t.Fatalf("%s: a's first failure: %+v", queue, a)
			}
			deleteMessage(t, db, pid, "a")
			deleteMessage(t, db, pid, "b")
			res, gone, err := stepOver(pgwire.PopRequest{PartitionID: pid, Group: "g", Lease: lease(), Batch: 10, AutoAck: auto})
			if err != nil || res.Status != pgwire.PopEmpty || len(gone) != 2 || res.Cursor != 2 {
				t.Fatalf("%s: the pop over the tombstones: %+v, gone %v, %v", queue, res, gone, err)
			}
			push(t, db, write(queue, "p", "c"))
			l = lease()
			if r := pop(t, db, pgwire.PopRequest{PartitionID: pid, Group: "g", Lease: l}); fmt.Sprint(txids(r.Messages)) != "[c]" {
				t.Fatalf("%s: the pop after the tombstones: %+v", queue, r)
			}
			a := ack(t, db, pid, "g", &l, pgwire.AckItem{TransactionID: "c", Status: "failed"})
			if a.Errs[0] != "" || a.DLQ[0] || a.Cursor != 2 {
				t.Fatalf("%s: c's first failure went to the dead letters (the retries of a and b counted): %+v", queue, a)
			}
		}
	}
}
