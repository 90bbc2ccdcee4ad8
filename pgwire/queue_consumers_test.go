package pgwire_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
)

// A queue's partitions by name with what they store, and every group's
// cursor on each of them with its lag, the live lease only, and what
// retention removed taken out (also from a partition the group never
// popped, which counts from the beginning for these "all" groups); the
// other tenant's queue of that name is apart.
func TestQueueConsumers(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	other := tenancy.TenantID(uuid.New())
	push(t, db, write("cc", "p2", "x1", "x2"))
	push(t, db, write("cc", "p1", "a"))
	push(t, db, write("cc", "p1", "b", "c"))
	w := write("cc", "p9", "o1")
	w.Tenant = other
	push(t, db, w)

	held := lease()
	r := pop(t, db, pgwire.PopRequest{Queue: "cc", Partition: "p1", Group: "g", Lease: held, Batch: 2})
	p1 := r.PartitionID
	expired := lease()
	r2 := pop(t, db, pgwire.PopRequest{Queue: "cc", Partition: "p2", Group: "h", Lease: expired, Batch: 1})
	p2 := r2.PartitionID
	if _, err := db.Pool().Exec(ctx, `UPDATE queen.consumer_cursors SET lease_expires_at = now() - interval '1 second'
		WHERE partition_id = $1 AND consumer_group = 'h'`, p2); err != nil {
		t.Fatal(err)
	}
	l := lease()
	done := pop(t, db, pgwire.PopRequest{Queue: "cc", Partition: "p2", Group: "a-done", Lease: l, Batch: 10})
	ack(t, db, p2, "a-done", &l, pgwire.AckItem{TransactionID: "x1", Status: "completed"}, pgwire.AckItem{TransactionID: "x2", Status: "completed"})
	if len(done.Messages) != 2 {
		t.Fatalf("popped %d", len(done.Messages))
	}
	// Retention removed p1's first segment (offset 1).
	if _, err := db.Pool().Exec(ctx, `DELETE FROM queen.log_segments WHERE partition_id = $1 AND base_offset = 1`, p1); err != nil {
		t.Fatal(err)
	}

	parts, cursors, found, err := db.QueueConsumers(ctx, [16]byte{}, "cc")
	if err != nil || !found {
		t.Fatalf("consumers: %v %v", found, err)
	}
	if len(parts) != 2 || parts[0].Name != "p1" || parts[0].ID != p1 || parts[0].Last != 3 || parts[0].Messages != 2 || parts[0].LastWrite.IsZero() ||
		parts[1].Name != "p2" || parts[1].Last != 2 || parts[1].Messages != 2 {
		t.Fatalf("partitions: %+v", parts)
	}
	var got []string
	for _, c := range cursors {
		got = append(got, fmt.Sprintf("%s/%s cursor %d lag %d popped %v live %v delivered %d", c.Group, c.Partition, c.Cursor, c.Lag, c.Popped, c.LeaseLive, c.Delivered))
	}
	want := []string{
		"a-done/p1 cursor 0 lag 2 popped false live false delivered 0",
		"a-done/p2 cursor 2 lag 0 popped true live false delivered 0",
		"g/p1 cursor 0 lag 2 popped true live true delivered 2",
		"g/p2 cursor 0 lag 2 popped false live false delivered 0",
		"h/p1 cursor 0 lag 2 popped false live false delivered 0",
		"h/p2 cursor 0 lag 2 popped true live false delivered 0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("cursors:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if g := cursors[2]; g.Lease != held || g.Expires.IsZero() || cursors[5].Lease != ([16]byte{}) || !cursors[5].Expires.IsZero() {
		t.Fatalf("leases: %+v", cursors)
	}

	// The other tenant sees its own partition only; an unknown queue is not found.
	if parts, cursors, found, err := db.QueueConsumers(ctx, other, "cc"); err != nil || !found || len(parts) != 1 || parts[0].Name != "p9" || len(cursors) != 0 {
		t.Fatalf("the other tenant: %+v %+v %v %v", parts, cursors, found, err)
	}
	if _, _, found, err := db.QueueConsumers(ctx, other, "nope"); err != nil || found {
		t.Fatalf("unknown queue: %v %v", found, err)
	}
	// A queue with no partition yet is found, empty.
	if _, err := db.Pool().Exec(ctx, `INSERT INTO queen.queues (tenant, name, namespace, task) VALUES ($1, 'bare', '', '')`, other); err != nil {
		t.Fatal(err)
	}
	if parts, cursors, found, err := db.QueueConsumers(ctx, other, "bare"); err != nil || !found || len(parts) != 0 || len(cursors) != 0 {
		t.Fatalf("a queue with no partition: %+v %+v %v %v", parts, cursors, found, err)
	}
}

// A group's lag counts every partition of the queue: a group that read 5
// of 30 messages, all from one partition, lags by 25, the partitions it
// never popped counted from the beginning.
func TestQueueConsumersLagCountsPartitionsNeverPopped(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	for i := 1; i <= 3; i++ {
		var ids []string
		for j := 1; j <= 10; j++ {
			ids = append(ids, fmt.Sprintf("m%d-%d", i, j))
		}
		push(t, db, write("thirty", fmt.Sprintf("p%d", i), ids...))
	}
	l := lease()
	r := pop(t, db, pgwire.PopRequest{Queue: "thirty", Partition: "p1", Group: "g", Lease: l, Batch: 5})
	if len(r.Messages) != 5 {
		t.Fatalf("popped %d, want 5", len(r.Messages))
	}
	ack(t, db, r.PartitionID, "g", &l, completed("m1-1", "m1-2", "m1-3", "m1-4", "m1-5")...)

	_, lags := groupLags(t, db, "thirty")
	if lags["g"] != "p1 5 p2 10 p3 10 = 25" {
		t.Fatalf("g's lag: %s, want p1 5 p2 10 p3 10 = 25", lags["g"])
	}
}

// A group that subscribed with "new" lags only by what came after its
// first pop: on the partitions it has popped, on those it never popped and
// on a partition made after it subscribed. Queue mode counts every
// partition from the beginning.
func TestQueueConsumersLagOfANewSubscription(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	push(t, db, write("fresh", "p1", "a1", "a2"))
	push(t, db, write("fresh", "p2", "b1", "b2", "b3"))
	r := pop(t, db, pgwire.PopRequest{Queue: "fresh", Partition: "p1", Group: "late", Lease: lease(), Batch: 10, SubscriptionMode: "new"})
	if len(r.Messages) != 0 {
		t.Fatalf("a new subscription's first pop delivered %d", len(r.Messages))
	}
	qm := lease()
	r = pop(t, db, pgwire.PopRequest{Queue: "fresh", Partition: "p1", Group: pgwire.QueueMode, Lease: qm, Batch: 1})
	ack(t, db, r.PartitionID, pgwire.QueueMode, &qm, completed("a1")...)
	// After the subscription: one more on p1, two on p2, one on a new p3.
	push(t, db, write("fresh", "p1", "a3"))
	push(t, db, write("fresh", "p2", "b4", "b5"))
	push(t, db, write("fresh", "p3", "c1"))

	cursors, lags := groupLags(t, db, "fresh")
	if lags["late"] != "p1 1 p2 2 p3 1 = 4" {
		t.Fatalf("late's lag: %s, want p1 1 p2 2 p3 1 = 4", lags["late"])
	}
	if lags[pgwire.QueueMode] != "p1 2 p2 5 p3 1 = 8" {
		t.Fatalf("queue mode's lag: %s, want p1 2 p2 5 p3 1 = 8", lags[pgwire.QueueMode])
	}
	for _, c := range cursors {
		if c.Popped != (c.Partition == "p1") {
			t.Fatalf("%s/%s popped %v", c.Group, c.Partition, c.Popped)
		}
	}
}

// groupLags reads the queue's cursors and renders each group's lag per
// partition and its sum.
func groupLags(t *testing.T, db *pgwire.DB, queue string) ([]pgwire.ConsumerCursor, map[string]string) {
	t.Helper()
	_, cursors, found, err := db.QueueConsumers(context.Background(), [16]byte{}, queue)
	if err != nil || !found {
		t.Fatalf("consumers of %s: %v %v", queue, found, err)
	}
	parts, sums := map[string][]string{}, map[string]int64{}
	for _, c := range cursors {
		parts[c.Group] = append(parts[c.Group], fmt.Sprintf("%s %d", c.Partition, c.Lag))
		sums[c.Group] += c.Lag
	}
	out := map[string]string{}
	for g, ps := range parts {
		out[g] = fmt.Sprintf("%s = %d", strings.Join(ps, " "), sums[g])
	}
	return cursors, out
}

// The console's statements read the queue's partition rows by its index,
// their consumer, subscription and dead-letter rows by key, and segments
// only through their partition's key: never every partition, and no scan
// of segments or transaction ids.
func TestQueueConsumersReadOnlyTheQueue(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	for i := 0; i < 20; i++ {
		push(t, db, write("plan", fmt.Sprintf("p%d", i), "a", "b"), write(fmt.Sprintf("other%d", i), "p", "a", "b"))
		l := lease()
		r := pop(t, db, pgwire.PopRequest{Queue: "plan", Partition: fmt.Sprintf("p%d", i), Group: "g", Lease: l, Batch: 1})
		ack(t, db, r.PartitionID, "g", &l, pgwire.AckItem{TransactionID: "a", Status: "dlq"})
	}
	if _, err := db.Pool().Exec(context.Background(), "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	qid := count(t, db.Pool(), `SELECT id FROM queen.queues WHERE name = 'plan'`)
	for sql, args := range map[string][]any{
		pgwire.QueueConsumersSQL: {uuid.UUID{}, "plan"},
		pgwire.RequeueSelectSQL:  {qid, "", int64(0), "", 1001},
	} {
		conn, err := db.Pool().Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		plan := textRows(t, conn, "EXPLAIN (COSTS OFF) "+sql, args...)
		conn.Release()
		text := strings.Join(plan, "\n")
		for i, line := range plan {
			for _, table := range []string{"log_partitions", "consumer_cursors", "consumer_subscriptions", "dead_letters", "queues"} {
				if !strings.Contains(line, " on "+table+" ") && !strings.HasSuffix(line, " on "+table) {
					continue
				}
				// An index scan with its condition, or a bitmap scan (its
				// bitmap index scan always has one): never a walk of a
				// whole index.
				next := ""
				if i+1 < len(plan) {
					next = plan[i+1]
				}
				keyed := strings.Contains(line, "Index") && strings.Contains(next, "Index Cond") ||
					strings.Contains(line, "Bitmap Heap Scan") && strings.Contains(next, "Recheck Cond")
				if !keyed {
					t.Errorf("%s is read without a key:\n%s", table, text)
				}
			}
		}
		if strings.Contains(text, "log_txns") {
			t.Errorf("a console statement reads log_txns:\n%s", text)
		}
		if strings.Contains(text, "Seq Scan") || strings.Contains(text, "Bitmap Heap Scan on log_segments") {
			t.Errorf("a console statement scans:\n%s", text)
		}
		for i, line := range plan {
			if strings.Contains(line, " on log_segments") && (i+1 == len(plan) || !strings.Contains(plan[i+1], "Index Cond") || !strings.Contains(plan[i+1], "partition_id")) {
				t.Errorf("log_segments read without its partition's key:\n%s", text)
			}
		}
	}
}
