package pgwire_test

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

func commitAcks(t testing.TB, db *pgwire.DB, ups ...pgwire.JSAckUpdate) {
	t.Helper()
	if err := db.CommitAcks(context.Background(), ups); err != nil {
		t.Fatalf("CommitAcks: %v", err)
	}
}

// state is a consumer's state on a partition, as text.
func state(t testing.TB, db *pgwire.DB, id, pid int64) string {
	t.Helper()
	for _, p := range consumerPartitions(t, db, id) {
		if p.ID == pid {
			var ds []string
			for _, o := range slices.Sorted(func(yield func(int64) bool) {
				for o := range p.Deliveries {
					if !yield(o) {
						return
					}
				}
			}) {
				ds = append(ds, fmt.Sprintf("%d:%d", o, p.Deliveries[o]))
			}
			return fmt.Sprintf("floor %d acked %v deliveries %v", p.Floor, p.Acked, ds)
		}
	}
	t.Fatalf("consumer %d has no partition %d", id, pid)
	return ""
}

// CommitAcks stores the floor on the group's cursor (where a Queen pop of
// the group goes on), the acknowledged offsets above it and the delivery
// counts; an older update (a bridge that lost the consumer) moves nothing
// back; the floor moves over acknowledged offsets right above it; dead
// letters go to the queue's, as the consumer's group.
func TestCommitAcksStoresAndJoins(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	const q = "js.acks"
	res := push(t, db, write(q, "p", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8"))
	pid := res[0].PartitionID
	c := putConsumer(t, db, jsConsumer(q, "C", pgwire.JSDeliverAll, `{}`), pgwire.JSActionCreate)

	commitAcks(t, db, pgwire.JSAckUpdate{ConsumerID: c.ID, PartitionID: pid, Floor: 2, Acked: []int64{6, 4, 1}, Deliveries: map[int64]int{3: 2, 4: 3, 2: 5}})
	if got, want := state(t, db, c.ID, pid), "floor 2 acked [4 6] deliveries [3:2 4:3]"; got != want {
		t.Fatalf("after the first update: %s, want %s", got, want)
	}
	// Older: a lower floor, and an acknowledgement the newer state lacks.
	commitAcks(t, db, pgwire.JSAckUpdate{ConsumerID: c.ID, PartitionID: pid, Floor: 1, Acked: []int64{3}, Deliveries: map[int64]int{5: 2, 6: 1}})
	if got, want := state(t, db, c.ID, pid), "floor 4 acked [6] deliveries [5:2 6:1]"; got != want {
		t.Fatalf("after an older update: %s, want %s", got, want)
	}
	commitAcks(t, db, pgwire.JSAckUpdate{ConsumerID: c.ID, PartitionID: pid, Floor: 0})
	if got, want := state(t, db, c.ID, pid), "floor 4 acked [6] deliveries [5:2 6:1]"; got != want {
		t.Fatalf("after a stale floor 0: %s, want %s", got, want)
	}
	// The floor is the group's cursor: a Queen pop of the group delivers
	// after it.
	if r := pop(t, db, pgwire.PopRequest{PartitionID: pid, Group: "C", Batch: 1}); r.Status != pgwire.PopDelivered || r.Messages[0].Offset != 5 {
		t.Fatalf("a pop of the consumer's group: %+v", r)
	}

	// A terminated message and one past max_deliver, with two updates of
	// the pair in one call, joined.
	commitAcks(t, db,
		pgwire.JSAckUpdate{ConsumerID: c.ID, PartitionID: pid, Floor: 4, Acked: []int64{7},
			Dead: []pgwire.JSDeadLetter{{Offset: 7, TransactionID: "m7", Error: "bad payload", Deliveries: 1}}},
		pgwire.JSAckUpdate{ConsumerID: c.ID, PartitionID: pid, Floor: 5, Deliveries: map[int64]int{8: 3},
			Dead: []pgwire.JSDeadLetter{{Offset: 6, TransactionID: "m6", Error: "max deliver", Deliveries: 3}}})
	if got, want := state(t, db, c.ID, pid), "floor 7 acked [] deliveries [8:3]"; got != want {
		t.Fatalf("after the joined updates: %s, want %s", got, want)
	}
	dls, total, err := db.DeadLetters(ctx, tenancy.TenantID{}, q, "C", 10, 0)
	if err != nil || total != 2 {
		t.Fatalf("dead letters: %d %v", total, err)
	}
	got := map[int64]string{}
	for _, d := range dls {
		got[d.Offset] = fmt.Sprintf("%s %s %d %v", d.TransactionID, d.Error, d.RetryCount, d.Found)
	}
	if fmt.Sprint(got) != "map[6:m6 max deliver 2 true 7:m7 bad payload 0 true]" {
		t.Fatalf("dead letters: %v", got)
	}
	// Written again (a retried commit): once.
	commitAcks(t, db, pgwire.JSAckUpdate{ConsumerID: c.ID, PartitionID: pid, Floor: 7,
		Dead: []pgwire.JSDeadLetter{{Offset: 7, TransactionID: "m7", Error: "again", Deliveries: 1}}})
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.dead_letters`); n != 2 {
		t.Fatalf("%d dead letters after writing one again", n)
	}

	// A seek of the group forgets the acknowledgement state.
	commitAcks(t, db, pgwire.JSAckUpdate{ConsumerID: c.ID, PartitionID: pid, Floor: 7, Deliveries: map[int64]int{8: 4}})
	if _, err := db.SeekGroup(ctx, pgwire.SeekRequest{Group: "C", Queue: q, ToEnd: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := state(t, db, c.ID, pid), "floor 8 acked [] deliveries []"; got != want {
		t.Fatalf("after a seek to the end: %s, want %s", got, want)
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.consumer_cursors WHERE acked_above IS NOT NULL OR delivery_offsets IS NOT NULL`); n != 0 {
		t.Fatalf("%d cursor rows keep acknowledgement state after the seek", n)
	}
}

// A partition made after the consumer gets its cursor row from the first
// update (its start where the subscription starts the consumer there); a
// partition of another queue gets none; bad updates write nothing.
func TestCommitAcksMakesRowsAndRefusesBadInput(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	c := putConsumer(t, db, jsConsumer("js.rows", "C", pgwire.JSDeliverNew, `{}`), pgwire.JSActionCreate)
	res := push(t, db, write("js.rows", "later", "x1", "x2"), write("js.other", "p", "y1"))
	later, other := res[0].PartitionID, res[1].PartitionID
	if got := state(t, db, c.ID, later); got != "floor 0 acked [] deliveries []" {
		t.Fatalf("a later partition before any update: %s", got)
	}
	commitAcks(t, db, pgwire.JSAckUpdate{ConsumerID: c.ID, PartitionID: later, Floor: 0, Acked: []int64{2}},
		pgwire.JSAckUpdate{ConsumerID: c.ID, PartitionID: other, Floor: 1})
	var start, cursor int64
	if err := db.Pool().QueryRow(ctx, `SELECT start_offset, cursor_offset FROM queen.consumer_cursors WHERE partition_id = $1 AND consumer_group = 'C'`,
		later).Scan(&start, &cursor); err != nil || start != 0 || cursor != 0 {
		t.Fatalf("the row made: start %d cursor %d %v", start, cursor, err)
	}
	if got := state(t, db, c.ID, later); got != "floor 0 acked [2] deliveries []" {
		t.Fatalf("a later partition after an update: %s", got)
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.consumer_cursors WHERE partition_id = $1`, other); n != 0 {
		t.Fatalf("an update of another queue's partition made %d rows", n)
	}
	const written = `SELECT coalesce(sum(cursor_offset + coalesce(cardinality(acked_above), 0)), 0) FROM queen.consumer_cursors`
	before := count(t, db.Pool(), written)
	for _, bad := range []pgwire.JSAckUpdate{
		{ConsumerID: 0, PartitionID: later},
		{ConsumerID: c.ID, PartitionID: later, Floor: -1},
		{ConsumerID: c.ID, PartitionID: later, Floor: 1, Acked: []int64{0}},
		{ConsumerID: c.ID, PartitionID: later, Floor: 1, Deliveries: map[int64]int{2: 0}},
		{ConsumerID: c.ID, PartitionID: later, Floor: 1, Dead: []pgwire.JSDeadLetter{{Offset: 2}}},
	} {
		err := db.CommitAcks(ctx, []pgwire.JSAckUpdate{{ConsumerID: c.ID, PartitionID: later, Floor: 2}, bad})
		if err == nil {
			t.Errorf("update %+v accepted", bad)
		}
	}
	if after := count(t, db.Pool(), written); after != before {
		t.Fatalf("refused calls wrote: floors and acknowledged offsets summed %d before, %d after", before, after)
	}
}

// The stored state is a join: the same updates in any order, and some of
// them twice, end in the same state, the one the updates' union gives.
func TestCommitAcksInAnyOrderEndAlike(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	var ids [txnsCount]string
	for i := range ids {
		ids[i] = fmt.Sprint("m", i)
	}
	res := push(t, db, write("js.join", "p", ids[:]...))
	pid := res[0].PartitionID
	rng := rand.New(rand.NewSource(44))
	for round := 0; round < 20; round++ {
		// Updates from a run of acknowledgements out of order: each
		// update a snapshot of what was acknowledged by then.
		acked := map[int64]bool{}
		deliveries := map[int64]int{}
		var ups []pgwire.JSAckUpdate
		for k := 0; k < 6; k++ {
			for n := 0; n < 4; n++ {
				o := int64(rng.Intn(txnsCount) + 1)
				acked[o] = true
				deliveries[int64(rng.Intn(txnsCount)+1)] = rng.Intn(5) + 1
			}
			floor := int64(0)
			for acked[floor+1] {
				floor++
			}
			u := pgwire.JSAckUpdate{PartitionID: pid, Floor: floor, Deliveries: map[int64]int{}}
			for o := range acked {
				u.Acked = append(u.Acked, o)
			}
			for o, n := range deliveries {
				u.Deliveries[o] = n
			}
			ups = append(ups, u)
		}
		var got []string
		for k := 0; k < 3; k++ {
			c := putConsumer(t, db, jsConsumer("js.join", fmt.Sprintf("r%d-%d", round, k), pgwire.JSDeliverAll, `{}`), pgwire.JSActionCreate)
			order := rng.Perm(len(ups))
			order = append(order, order[:2]...) // two of them twice
			for _, i := range order {
				u := ups[i]
				u.ConsumerID = c.ID
				commitAcks(t, db, u)
			}
			got = append(got, state(t, db, c.ID, pid))
		}
		if got[0] != got[1] || got[1] != got[2] {
			t.Fatalf("round %d: the same updates in three orders end in\n%s\n%s\n%s", round, got[0], got[1], got[2])
		}
		last := ups[len(ups)-1] // holds every acknowledgement and count
		want := pgwire.JSAckUpdate{Floor: last.Floor}
		for _, o := range slices.Sorted(mapKeys(acked)) {
			if o > last.Floor {
				want.Acked = append(want.Acked, o)
			}
		}
		var ds []string
		for _, o := range slices.Sorted(mapKeys(deliveries)) {
			if o > last.Floor {
				ds = append(ds, fmt.Sprintf("%d:%d", o, maxCount(ups, o)))
			}
		}
		if w := fmt.Sprintf("floor %d acked %v deliveries %v", want.Floor, want.Acked, ds); got[0] != w {
			t.Fatalf("round %d: %s, want %s", round, got[0], w)
		}
	}
}

// txnsCount is the partition's length in TestCommitAcksInAnyOrderEndAlike.
const txnsCount = 40

func mapKeys[V any](m map[int64]V) func(func(int64) bool) {
	return func(yield func(int64) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// maxCount is the greatest count of offset o among ups.
func maxCount(ups []pgwire.JSAckUpdate, o int64) int {
	n := 0
	for _, u := range ups {
		n = max(n, u.Deliveries[o])
	}
	return n
}

// Two CommitAcks of 50 consumers on every partition of a queue, given in
// opposite orders, run at the same moment with a push to those partitions
// and a Queen acknowledgement of a group on them, many rounds. Every
// statement locks its consumer rows in ascending (partition, group), so
// none deadlocks: PostgreSQL would kill one side of a cycle (40P01), which
// withConn would count as a retry; none is counted. Every other round a
// row in the middle is held until both wait for a lock, so that they
// surely overlap. In the end each floor is the greatest any call gave.
func TestCommitAcksConcurrentlyNeverDeadlock(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	const q, parts, consumers, rounds = "js.order", 4, 50, 12
	var writes []segment.Write
	for p := 0; p < parts; p++ {
		writes = append(writes, write(q, fmt.Sprint("p", p), fmt.Sprint("seed-", p)))
	}
	pids := make([]int64, parts)
	for i, r := range push(t, db, writes...) {
		pids[i] = r.PartitionID
	}
	cs := make([]pgwire.JSConsumer, consumers)
	for i := range cs {
		cs[i] = putConsumer(t, db, jsConsumer(q, fmt.Sprintf("c%02d", i), pgwire.JSDeliverAll, `{}`), pgwire.JSActionCreate)
	}
	for round := 1; round <= rounds; round++ {
		writes = writes[:0]
		for p := 0; p < parts; p++ {
			writes = append(writes, write(q, fmt.Sprint("p", p), fmt.Sprintf("r%d-p%d", round, p)))
		}
		// The Queen group's delivery, acknowledged during the commits.
		l := lease()
		r := pop(t, db, pgwire.PopRequest{PartitionID: pids[round%parts], Group: "queen", Lease: l, SubscriptionMode: "all", Queue: q, Partition: fmt.Sprint("p", round%parts)})
		if r.Status != pgwire.PopDelivered {
			t.Fatalf("round %d: the Queen group's pop: %+v", round, r)
		}
		var ups [2][]pgwire.JSAckUpdate
		for _, c := range cs {
			for _, pid := range pids {
				// One call's floors are this round's, the other's the
				// round before's (a stale owner's).
				ups[0] = append(ups[0], pgwire.JSAckUpdate{ConsumerID: c.ID, PartitionID: pid, Floor: int64(round), Acked: []int64{int64(100 + 3*round)}})
				ups[1] = append(ups[1], pgwire.JSAckUpdate{ConsumerID: c.ID, PartitionID: pid, Floor: int64(round - 1), Deliveries: map[int64]int{int64(round + 1): 2}})
			}
		}
		slices.Reverse(ups[1])
		release := func() {}
		if round%2 == 0 {
			tx, err := db.Pool().Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, `SELECT 1 FROM queen.consumer_cursors WHERE partition_id = $1 AND consumer_group = 'c25' FOR UPDATE`, pids[parts/2]); err != nil {
				t.Fatal(err)
			}
			release = func() {
				waitForStatementLockWaits(t, db, "/* queen:js-acks */", 2)
				if err := tx.Rollback(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		errs := make([]error, 4)
		run := func(k int, fn func() error) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[k] = fn()
			}()
		}
		run(0, func() error { return db.CommitAcks(ctx, ups[0]) })
		run(1, func() error { return db.CommitAcks(ctx, ups[1]) })
		run(2, func() error { _, err := db.PushBundle(ctx, writes); return err })
		run(3, func() error {
			_, err := db.Ack(ctx, tenancy.TenantID{}, r.PartitionID, "queen", &l, completed(txids(r.Messages)...))
			return err
		})
		close(start)
		release()
		wg.Wait()
		for k, err := range errs {
			if err != nil {
				t.Fatalf("round %d: call %d: %v", round, k, err)
			}
		}
		if n := count(t, db.Pool(), `SELECT count(*) FROM queen.consumer_cursors WHERE consumer_group LIKE 'c%' AND cursor_offset <> $1`, round); n != 0 {
			t.Fatalf("round %d: %d floors are not the greatest given (%d)", round, n, round)
		}
		// Every round adds an acknowledged offset far above the floors
		// (100 + 3 × round: never a run the floor moves over); the counts
		// at or below the floor go.
		if n := count(t, db.Pool(), `SELECT count(*) FROM queen.consumer_cursors WHERE consumer_group LIKE 'c%'
			AND NOT (cardinality(acked_above) = $1 AND acked_above[$1] = 100 + 3 * $1 AND delivery_offsets = ARRAY[$1::int8 + 1])`, round); n != 0 {
			t.Fatalf("round %d: %d rows lack what one of the two calls stored", round, n)
		}
	}
	if r := db.Stats().Retries; len(r) != 0 {
		t.Fatalf("statements run again (a deadlock or serialization failure): %v", r)
	}
}

// waitForStatementLockWaits polls until n statements whose text starts
// with prefix wait for a lock in the test's database.
func waitForStatementLockWaits(t *testing.T, db *pgwire.DB, prefix string, n int64) {
	t.Helper()
	testkit.WaitFor(t, fmt.Sprintf("%d statements %s to wait for a lock together", n, prefix), time.Minute, func() bool {
		return count(t, db.Pool(), `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND starts_with(query, $1)`, prefix) == n
	})
}

// The acknowledgement state lives on the cursor row and no index covers
// it: every commit of a pair is a heap-only (HOT) update of that row, with
// sets of offsets on it or not. Counted by PostgreSQL's statistics of the
// test's own database, which report the updates within a few seconds.
func TestCommitAcksUpdatesStayHeapOnly(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	res := push(t, db, write("js.hot", "p", "m1"))
	c := putConsumer(t, db, jsConsumer("js.hot", "C", pgwire.JSDeliverAll, `{}`), pgwire.JSActionCreate)
	const commits = 30
	for i := 1; i <= commits; i++ {
		u := pgwire.JSAckUpdate{ConsumerID: c.ID, PartitionID: res[0].PartitionID, Floor: int64(i)}
		if i%2 == 0 {
			u.Acked, u.Deliveries = []int64{int64(i + 2), int64(i + 4)}, map[int64]int{int64(i + 3): 2}
		}
		commitAcks(t, db, u)
	}
	var upd, hot int64
	testkit.WaitFor(t, "the statistics to report the commits' updates", time.Minute, func() bool {
		if err := db.Pool().QueryRow(context.Background(), `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables
			WHERE schemaname = 'queen' AND relname = 'consumer_cursors'`).Scan(&upd, &hot); err != nil {
			t.Fatal(err)
		}
		return upd >= commits
	})
	if upd != commits || hot != upd {
		t.Fatalf("%d updates of cursor rows, %d of them heap-only; want %d, all heap-only", upd, hot, commits)
	}
}

// The delivered mark (the highest offset handed out) is stored with the
// floor and only rises: an older update does not lower it, and it is read
// back at least at the floor.
func TestCommitAcksKeepsTheDeliveredMark(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	const q = "js.delivered"
	res := push(t, db, write(q, "p", "m1", "m2", "m3", "m4", "m5", "m6"))
	pid := res[0].PartitionID
	c := putConsumer(t, db, jsConsumer(q, "C", pgwire.JSDeliverAll, `{}`), pgwire.JSActionCreate)
	delivered := func() int64 {
		for _, p := range consumerPartitions(t, db, c.ID) {
			if p.ID == pid {
				return p.Delivered
			}
		}
		t.Fatalf("consumer %d has no partition %d", c.ID, pid)
		return 0
	}
	commitAcks(t, db, pgwire.JSAckUpdate{ConsumerID: c.ID, PartitionID: pid, Floor: 1, Delivered: 4})
	if got := delivered(); got != 4 {
		t.Fatalf("delivered after the first update: %d, want 4", got)
	}
	commitAcks(t, db, pgwire.JSAckUpdate{ConsumerID: c.ID, PartitionID: pid, Floor: 2, Delivered: 3})
	if got := delivered(); got != 4 {
		t.Fatalf("delivered after an older mark: %d, want 4 (it only rises)", got)
	}
	commitAcks(t, db, pgwire.JSAckUpdate{ConsumerID: c.ID, PartitionID: pid, Floor: 5})
	if got := delivered(); got != 5 {
		t.Fatalf("delivered after the floor passed it: %d, want 5", got)
	}
	if err := db.CommitAcks(context.Background(), []pgwire.JSAckUpdate{{ConsumerID: c.ID, PartitionID: pid, Floor: 5, Delivered: -1}}); err == nil {
		t.Fatal("a negative delivered mark was taken")
	}
}
