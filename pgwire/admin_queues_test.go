package pgwire_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

func queueStat(t *testing.T, db *pgwire.DB, tenant tenancy.TenantID, name string) pgwire.QueueStat {
	t.Helper()
	qs, err := db.QueueStats(context.Background(), tenant, pgwire.QueueFilter{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 1 {
		t.Fatalf("queue %q: %d rows", name, len(qs))
	}
	return qs[0]
}

// The counts follow the high-water marks, the cursors, the leases and the
// dead letters: everything pending at first, what a live lease delivered
// processing, what the queue-mode cursor passed completed.
func TestQueueCountsFollowCursorsAndLeases(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	push(t, db, write("cnt", "p1", "a", "b", "c"), write("cnt", "p2", "x"))
	push(t, db, write("cnt", "p1", "d", "e"))
	want := func(when string, c pgwire.Counts, leases int64) {
		t.Helper()
		q := queueStat(t, db, [16]byte{}, "cnt")
		if q.Counts != c || q.Partitions != 2 || q.Leases.Active != leases {
			t.Fatalf("%s: %+v, want %+v with %d leases", when, q, c, leases)
		}
	}
	want("pushed", pgwire.Counts{Total: 6, Pending: 6}, 0)

	l := lease()
	r := pop(t, db, pgwire.PopRequest{Queue: "cnt", Partition: "p1", Lease: l, Batch: 3})
	want("three under a lease", pgwire.Counts{Total: 6, Pending: 3, Processing: 3}, 1)
	ack(t, db, r.PartitionID, pgwire.QueueMode, &l, completed("a", "b")...)
	want("two acknowledged", pgwire.Counts{Total: 6, Pending: 3, Processing: 1, Completed: 2}, 1)
	ack(t, db, r.PartitionID, pgwire.QueueMode, &l, pgwire.AckItem{TransactionID: "c", Status: "dlq", Error: "bad"})
	want("one dead-lettered", pgwire.Counts{Total: 6, Pending: 3, Completed: 3, DeadLetter: 1}, 0)

	q, parts, found, err := db.PartitionStats(context.Background(), [16]byte{}, "cnt")
	if err != nil || !found || len(parts) != 2 || q.Name != "cnt" || q.ID == 0 || q.CreatedAt.IsZero() || string(q.Options["encryptionEnabled"]) != "false" {
		t.Fatalf("partitions: %v %v %+v %+v", err, found, q, parts)
	}
	p1 := parts[0]
	if p1.Name != "p1" || p1.Last != 5 || p1.Counts != (pgwire.Counts{Total: 5, Pending: 2, Completed: 3, DeadLetter: 1}) ||
		p1.Oldest.IsZero() || p1.Newest.Before(p1.Oldest) || p1.OldestPending.IsZero() {
		t.Fatalf("p1: %+v", p1)
	}
	if _, _, found, err := db.PartitionStats(context.Background(), tenancy.TenantID(uuid.New()), "cnt"); found || err != nil {
		t.Fatalf("another tenant finds the queue: %v %v", found, err)
	}
	if qs, err := db.QueueStats(context.Background(), tenancy.TenantID(uuid.New()), pgwire.QueueFilter{}); err != nil || len(qs) != 0 {
		t.Fatalf("another tenant lists %+v %v", qs, err)
	}
	lag, err := db.TenantLag(context.Background(), [16]byte{})
	if err != nil || lag.Partitions != 2 || lag.OffsetMax != 2 || lag.OffsetMin != 1 {
		t.Fatalf("lag: %+v %v", lag, err)
	}
	errs, err := db.TopDeadLetterErrors(context.Background(), [16]byte{}, pgwire.QueueFilter{Name: "cnt"}, 5)
	if err != nil || len(errs) != 1 || errs[0] != (pgwire.DeadLetterError{Error: "bad", Count: 1}) {
		t.Fatalf("dead-letter errors: %+v %v", errs, err)
	}
	// A named group alone: the lowest cursor decides.
	push(t, db, write("grp", "p", "a", "b"))
	gl := lease()
	g := pop(t, db, pgwire.PopRequest{Queue: "grp", Partition: "p", Group: "g1", Lease: gl, Batch: 1})
	ack(t, db, g.PartitionID, "g1", &gl, completed("a")...)
	pop(t, db, pgwire.PopRequest{Queue: "grp", Partition: "p", Group: "g2", AutoAck: true, Batch: 2})
	if q := queueStat(t, db, [16]byte{}, "grp"); q.Counts != (pgwire.Counts{Total: 2, Pending: 1, Completed: 1}) {
		t.Fatalf("named groups: %+v", q.Counts)
	}
}

// Every count statement reaches segments through their primary key: none
// reads log_segments or log_txns whole.
func TestCountStatementsDoNotScanSegments(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	for i := 0; i < 20; i++ {
		push(t, db, write("plan", fmt.Sprintf("p%d", i), "a", "b"))
	}
	if _, err := db.Pool().Exec(context.Background(), "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	for sql, args := range pgwire.CountSQL {
		conn, err := db.Pool().Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		plan := textRows(t, conn, "EXPLAIN (COSTS OFF) "+sql, args...)
		conn.Release()
		text := strings.Join(plan, "\n")
		// log_partitions through an index on the key it is given (a
		// queue's id), never every partition.
		for i, line := range plan {
			if strings.Contains(line, " on log_partitions") && (i+1 == len(plan) || !strings.Contains(plan[i+1], "Index Cond")) {
				t.Errorf("a count statement reads log_partitions without a key:\n%s", text)
			}
		}
		for _, table := range []string{"log_segments", "log_txns"} {
			if strings.Contains(text, "Seq Scan on "+table) || strings.Contains(text, "Bitmap Heap Scan on "+table) {
				t.Errorf("a count statement scans %s:\n%s", table, text)
			}
		}
	}
}

// A delete removes the queue and everything under it, its tenant's only;
// a push afterwards makes a fresh queue; the purge leaves nothing behind.
func TestDeleteQueueRemovesEverything(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	other := tenancy.TenantID(uuid.New())
	push(t, db, write("del", "p1", "a", "b"), write("del", "p2", "c"), write("keep", "p", "k"))
	w := write("del", "p1", "z")
	w.Tenant = other
	push(t, db, w)
	l := lease()
	r := pop(t, db, pgwire.PopRequest{Queue: "del", Partition: "p1", Lease: l, Batch: 1})
	ack(t, db, r.PartitionID, pgwire.QueueMode, &l, pgwire.AckItem{TransactionID: "a", Status: "dlq"})
	pop(t, db, pgwire.PopRequest{Queue: "del", Partition: "p2", Group: "g", Lease: lease()})
	if ok, err := db.DeleteMessage(ctx, [16]byte{}, r.PartitionID, "b"); err != nil || !ok {
		t.Fatalf("tombstone: %v %v", ok, err)
	}

	d, err := db.DeleteQueue(ctx, [16]byte{}, "del")
	if err != nil || !d.Existed || len(d.Partitions) != 2 || d.Partitions[0] >= d.Partitions[1] {
		t.Fatalf("delete: %+v %v", d, err)
	}
	for _, q := range []string{
		`SELECT count(*) FROM queen.queues WHERE name = 'del' AND tenant = '00000000-0000-0000-0000-000000000000' AND $1::bigint[] IS NOT NULL`,
		`SELECT count(*) FROM queen.log_partitions WHERE id = ANY($1)`,
		`SELECT count(*) FROM queen.consumer_cursors WHERE partition_id = ANY($1)`,
		`SELECT count(*) FROM queen.dead_letters WHERE partition_id = ANY($1)`,
		`SELECT count(*) FROM queen.consumer_subscriptions WHERE queue_id = ` + fmt.Sprint(d.QueueID) + ` AND $1::bigint[] IS NOT NULL`,
	} {
		if n := count(t, db.Pool(), q, d.Partitions); n != 0 {
			t.Fatalf("%s: %d left", q, n)
		}
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.log_purges`); n != 2 {
		t.Fatalf("%d partitions to purge, want 2", n)
	}
	for {
		p, err := db.PurgeStep(ctx, 16, 1) // one row at a time: several steps
		if err != nil {
			t.Fatal(err)
		}
		if p.Partitions == 0 {
			break
		}
	}
	for _, table := range []string{"log_segments", "log_txns", "log_tombstones", "log_purges"} {
		if n := count(t, db.Pool(), `SELECT count(*) FROM queen.`+table+` WHERE partition_id = ANY($1)`, d.Partitions); n != 0 {
			t.Fatalf("%s: %d rows left", table, n)
		}
	}
	// The other queue and the other tenant's queue of that name stay.
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.log_segments`); n != 2 {
		t.Fatalf("%d segments left, want keep's and the other tenant's", n)
	}
	if d, err := db.DeleteQueue(ctx, [16]byte{}, "del"); err != nil || d.Existed {
		t.Fatalf("second delete: %+v %v", d, err)
	}
	// A push makes the queue anew, from offset 1.
	if res := push(t, db, write("del", "p1", "a")); res[0].BaseOffset != 1 || res[0].Status != segment.Queued {
		t.Fatalf("push after the delete: %+v", res[0])
	}
}

// A push that names the partitions of a queue deleted meanwhile (ids the
// bridge cached before the delete) writes into a new queue of that name,
// and the bundle's other segments are written too: the delete never fails
// someone else's push.
func TestPushWithIDsOfADeletedQueueMakesItAnew(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	res := push(t, db, write("gone", "p", "a"))
	if res[0].Status != segment.Queued {
		t.Fatalf("first push: %+v", res[0])
	}
	old := res[0]
	if d, err := db.DeleteQueue(ctx, [16]byte{}, "gone"); err != nil || !d.Existed {
		t.Fatalf("delete: %+v %v", d, err)
	}
	stale := write("gone", "p", "b")
	stale.PartitionID, stale.QueueID = old.PartitionID, old.QueueID
	stale.Verified = old.BaseOffset
	res = push(t, db, write("other", "p", "x"), stale)
	for i, r := range res {
		if r.Status != segment.Queued {
			t.Fatalf("segment %d after the delete: %+v", i, r)
		}
	}
	if res[1].PartitionID == old.PartitionID || res[1].BaseOffset != 1 {
		t.Fatalf("the deleted queue's push went to partition %d at offset %d; want a new partition from offset 1 (old %d)",
			res[1].PartitionID, res[1].BaseOffset, old.PartitionID)
	}
}
