package pgwire_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/queenbridge/queenbridge/storage"
)

func groupSeek(t testing.TB, db *pgwire.DB, req pgwire.SeekRequest) []pgwire.GroupPartition {
	t.Helper()
	out, err := db.SeekGroup(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// groupCursorRow is every column of a cursor row a delivery sets, as text.
func groupCursorRow(t testing.TB, db *pgwire.DB, pid int64, group string) string {
	t.Helper()
	var s string
	if err := db.Pool().QueryRow(context.Background(), `SELECT format('cursor=%s to=%s delivered=%s acked=%s retry=%s lease=%s expires=%s hashes=%s start=%s',
			cursor_offset, delivered_to, delivered_count, acked_count, retry_count, coalesce(lease_id::text, '-'),
			coalesce(lease_expires_at::text, '-'), coalesce(length(delivered_hashes)::text, '-'), coalesce(start_offset::text, '-'))
		FROM queen.consumer_cursors WHERE partition_id = $1 AND consumer_group = $2`, pid, group).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// A seek forgets what the row's lease delivered, every column of it: no
// acknowledgement of that lease applies afterwards, by the whole-batch
// compare-and-set or by consumer_ack_v1, and the retry count starts over.
// By time it goes before the first stored message created after the time.
func TestSeekForgetsTheDelivery(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	first := push(t, db, write("s", "p", "a", "b", "c"))[0]
	push(t, db, write("s", "p", "d", "e"))
	pid := pop(t, db, pgwire.PopRequest{Queue: "s", Partition: "p", Group: "g", Batch: 1}).PartitionID // seeds; a delivered
	l := lease()
	if r := ack(t, db, pid, "g", nil, pgwire.AckItem{TransactionID: "a", Status: "failed"}); r.Errs[0] != "" {
		t.Fatalf("failed ack: %+v", r)
	}
	r := pop(t, db, pgwire.PopRequest{PartitionID: pid, Group: "g", Lease: l, Batch: 5})
	if fmt.Sprint(txids(r.Messages)) != "[a b c d e]" {
		t.Fatalf("pop: %+v", r)
	}

	got := groupSeek(t, db, pgwire.SeekRequest{Group: "g", Queue: "s", At: first.CreatedAt})
	if len(got) != 1 || got[0] != (pgwire.GroupPartition{Queue: "s", Partition: "p", PartitionID: pid, Cursor: 3}) {
		t.Fatalf("seek to the first segment's time: %+v", got)
	}
	if row, want := groupCursorRow(t, db, pid, "g"), "cursor=3 to=3 delivered=0 acked=0 retry=0 lease=- expires=- hashes=- start=3"; row != want {
		t.Fatalf("after the seek:\n %s\nwant\n %s", row, want)
	}
	for _, ids := range [][]string{{"a", "b", "c", "d", "e"}, {"d", "e"}} {
		if res := wholeAck(t, db, pgwire.WholeAck{PID: pid, Group: "g", Lease: l, Status: "completed", TransactionIDs: ids}); res[0].Applied {
			t.Fatalf("a whole-batch ack of %v under the lease from before the seek applied", ids)
		}
	}
	if res := ack(t, db, pid, "g", &l, completed("d", "e")...); res.Errs[0] == "" || res.Errs[1] == "" || res.Cursor != 3 {
		t.Fatalf("a general ack under the old lease: %+v", res)
	}
	if res := ack(t, db, pid, "g", nil, completed("d")...); res.Errs[0] == "" {
		t.Fatalf("an ack naming no lease of a message not delivered since the seek: %+v", res)
	}
	if r := pop(t, db, pgwire.PopRequest{PartitionID: pid, Group: "g", Batch: 5}); fmt.Sprint(txids(r.Messages)) != "[d e]" || r.Cursor != 3 {
		t.Fatalf("pop after the seek: %+v", r)
	}

	// Before every stored segment: before the first stored one (retention
	// removed a, b, c); after every one: the high-water mark.
	if _, err := db.Pool().Exec(context.Background(), `DELETE FROM queen.log_segments WHERE partition_id = $1 AND end_offset = 3`, pid); err != nil {
		t.Fatal(err)
	}
	if got := groupSeek(t, db, pgwire.SeekRequest{Group: "g", Queue: "s", At: time.Unix(0, 0)}); got[0].Cursor != 3 {
		t.Fatalf("seek before everything: %+v", got)
	}
	if got := groupSeek(t, db, pgwire.SeekRequest{Group: "g", Queue: "s", At: time.Now().Add(time.Hour)}); got[0].Cursor != 5 {
		t.Fatalf("seek after everything: %+v", got)
	}
}

// A seek makes the cursors a group lacks, on every partition of the queue
// (or the one named), for the tenant's queue only; a delete removes the
// tenant's cursors of the group and, when asked, its subscriptions.
func TestSeekAndDeleteScope(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	other := [16]byte{7}
	push(t, db, write("q", "p1", "a", "b"), write("q", "p2", "c"))
	if _, err := db.ConfigureQueue(context.Background(), other, "q", storage.QueueUpdate{}); err != nil {
		t.Fatal(err)
	}
	got := groupSeek(t, db, pgwire.SeekRequest{Group: "fresh", Queue: "q", ToEnd: true})
	if len(got) != 2 || got[0].Partition != "p1" || got[0].Cursor != 2 || got[1].Partition != "p2" || got[1].Cursor != 1 {
		t.Fatalf("seek to the end of q: %+v", got)
	}
	if got := groupSeek(t, db, pgwire.SeekRequest{Group: "fresh", Queue: "q", Partition: "p2", At: time.Unix(0, 0)}); len(got) != 1 || got[0].Cursor != 0 {
		t.Fatalf("seek of p2: %+v", got)
	}
	if got := groupSeek(t, db, pgwire.SeekRequest{Tenant: other, Group: "fresh", Queue: "q", ToEnd: true}); len(got) != 0 {
		t.Fatalf("the other tenant's q has no partition: %+v", got)
	}
	if got := groupSeek(t, db, pgwire.SeekRequest{Group: "fresh", Queue: "q", Partition: "p9", ToEnd: true}); len(got) != 0 {
		t.Fatalf("an unknown partition: %+v", got)
	}
	cs, err := db.GroupCursors(context.Background(), [16]byte{}, "fresh")
	if err != nil || len(cs) != 2 || cs[1].Lag != 1 || cs[1].OldestAt.IsZero() || cs[0].Lag != 0 || !cs[0].OldestAt.IsZero() {
		t.Fatalf("cursors: %+v %v", cs, err)
	}

	subs := func() int64 {
		return count(t, db.Pool(), `SELECT count(*) FROM queen.consumer_subscriptions WHERE consumer_group = 'fresh'`)
	}
	// A seeked cursor is not seeded again: the pop of p1 stores nothing; the
	// first pop of a partition made after the seek does.
	pop(t, db, pgwire.PopRequest{Queue: "q", Partition: "p1", Group: "fresh"})
	if subs() != 0 {
		t.Fatal("a pop of a seeked cursor stored a subscription")
	}
	push(t, db, write("q", "p3", "d"))
	if r := pop(t, db, pgwire.PopRequest{Queue: "q", Partition: "p3", Group: "fresh"}); fmt.Sprint(txids(r.Messages)) != "[d]" || subs() != 1 {
		t.Fatalf("first pop of p3: %+v", r)
	}
	if gone, err := db.DeleteGroup(context.Background(), other, "fresh", "", true); err != nil || len(gone) != 0 || subs() != 1 {
		t.Fatalf("the other tenant's delete: %+v %v", gone, err)
	}
	gone, err := db.DeleteGroup(context.Background(), [16]byte{}, "fresh", "q", false)
	if err != nil || len(gone) != 3 || gone[0].Queue != "q" || subs() != 1 {
		t.Fatalf("delete keeping the subscription: %+v %v", gone, err)
	}
	if gone, err := db.DeleteGroup(context.Background(), [16]byte{}, "fresh", "", true); err != nil || len(gone) != 0 || subs() != 0 {
		t.Fatalf("delete of the subscription: %+v %v", gone, err)
	}
}

// The delete and the seek take the cursor rows in ascending partition id
// (the group is one): the delete's LockRows reads rows sorted or merged on
// the partition id, the seek's insert takes its rows sorted by it. Read
// from the generic plans, over a few hundred cursor rows.
func TestGroupStatementsLockInAscendingOrder(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	var writes []segment.Write
	for p := 0; p < 200; p++ {
		writes = append(writes, write("plan.g", fmt.Sprint("p", p), fmt.Sprint("t", p)))
	}
	for i := range push(t, db, writes...) {
		for _, g := range []string{"a", "b"} {
			pop(t, db, pgwire.PopRequest{Queue: "plan.g", Partition: writes[i].Partition, Group: g, SubscriptionMode: "all"})
		}
	}
	if _, err := db.Pool().Exec(ctx, "ANALYZE queen.consumer_cursors, queen.log_partitions, queen.queues"); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, prepare, args string
		after               string   // the node whose input must come in order
		want                []string // one of these on the line below it
	}{
		{"delete", "PREPARE plan(uuid, text, text, bool) AS " + pgwire.DeleteGroupSQL,
			"('00000000-0000-0000-0000-000000000000', 'a', '', true)", "LockRows",
			[]string{"Sort Key: c.partition_id", "Merge Cond: (p.id = c.partition_id)", "Merge Cond: (c.partition_id = p.id)"}},
		{"seek", "PREPARE plan(uuid, text, text, text, bool, timestamptz) AS " + pgwire.SeekSQL,
			"('00000000-0000-0000-0000-000000000000', 'a', 'plan.g', '', true, null)", "Insert on consumer_cursors",
			[]string{"Sort Key: t_1.id", "Sort Key: t.id"}},
	} {
		if _, err := conn.Exec(ctx, c.prepare); err != nil {
			t.Fatal(err)
		}
		plan := textRows(t, conn, "EXPLAIN (COSTS OFF) EXECUTE plan"+c.args)
		if _, err := conn.Exec(ctx, "DEALLOCATE plan"); err != nil {
			t.Fatal(err)
		}
		ok := false
		for i, line := range plan {
			if strings.Contains(line, c.after) {
				for _, below := range plan[i+1 : min(i+7, len(plan))] {
					for _, w := range c.want {
						ok = ok || strings.TrimSpace(below) == w
					}
				}
			}
		}
		if !ok {
			t.Fatalf("%s: the rows under %s are not in partition order:\n%s", c.name, c.after, strings.Join(plan, "\n"))
		}
	}
}

// Seeks, deletes, pops and whole-batch acknowledgements of many partitions
// at once, over the same cursor rows: every statement locks them in the
// one order, so none fails with a deadlock.
func TestGroupChangesBesideAcksNeverDeadlock(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	var writes []segment.Write
	for p := 0; p < 24; p++ {
		writes = append(writes, write("dl", fmt.Sprint("p", p), "a", "b", "c"))
	}
	var pids []int64
	for _, r := range push(t, db, writes...) {
		pids = append(pids, r.PartitionID)
		pop(t, db, pgwire.PopRequest{PartitionID: r.PartitionID, Queue: "dl", Partition: "", Group: "g", Batch: 1})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	run := func(f func(i int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 12; i++ {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	run(func(i int) error {
		_, err := db.SeekGroup(ctx, pgwire.SeekRequest{Group: "g", Queue: "dl", ToEnd: i%2 == 0, At: time.Unix(0, 0)})
		return err
	})
	run(func(i int) error {
		_, err := db.DeleteGroup(ctx, [16]byte{}, "g", "dl", i%3 == 0)
		return err
	})
	run(func(int) error {
		l := lease()
		var acks []pgwire.WholeAck
		for k := len(pids) - 1; k >= 0; k-- { // in descending order: the statement sorts
			r, err := db.Pop(ctx, pgwire.PopRequest{PartitionID: pids[k], Queue: "dl", Partition: writes[k].Partition, Group: "g", Lease: l, Batch: 3})
			if err != nil {
				return err
			}
			if r.Status == pgwire.PopDelivered {
				acks = append(acks, pgwire.WholeAck{PID: r.PartitionID, Group: "g", Lease: l, Status: "completed", TransactionIDs: txids(r.Messages)})
			}
		}
		_, err := db.AckWhole(ctx, acks)
		return err
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
