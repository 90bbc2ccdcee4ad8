package pgwire_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"math/rand"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/queenbridge/queenbridge/storage"
)

func lease() [16]byte { return uuid.New() }

// openDSN1 opens a database of the test's own through one connection.
func openDSN1(t *testing.T) *pgwire.DB {
	return testkit.OpenDB(t, testenv.NewDatabase(t), 1)
}

func pop(t testing.TB, db *pgwire.DB, req pgwire.PopRequest) pgwire.PopResult {
	t.Helper()
	if req.Batch == 0 {
		req.Batch = 100
	}
	if req.Group == "" {
		req.Group = pgwire.QueueMode
	}
	if req.Lease == ([16]byte{}) && !req.AutoAck {
		req.Lease = lease()
	}
	res, err := db.Pop(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func ack(t testing.TB, db *pgwire.DB, pid int64, group string, l *[16]byte, items ...pgwire.AckItem) pgwire.AckResult {
	t.Helper()
	res, err := db.Ack(context.Background(), [16]byte{}, pid, group, l, items)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func txids(msgs []pgwire.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Frame.TransactionID
	}
	return out
}

var completed = testkit.Completed

func setOptions(t testing.TB, db *pgwire.DB, queue string, opts map[string]any) {
	t.Helper()
	other := map[string]json.RawMessage{}
	for k, v := range opts {
		b, _ := json.Marshal(v)
		other[k] = b
	}
	if _, err := db.ConfigureQueue(context.Background(), [16]byte{}, queue, storage.QueueUpdate{Other: other}); err != nil {
		t.Fatal(err)
	}
}

// A pop claims, delivers after the cursor in offset order up to the batch,
// and holds the partition; a second claim is refused; acks move the cursor
// and release the lease when they reach what it delivered.
func TestPopClaimAckRelease(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	push(t, db, write("c", "p", "a", "b", "c"))
	push(t, db, write("c", "p", "d", "e"))
	l := lease()
	r := pop(t, db, pgwire.PopRequest{Queue: "c", Partition: "p", Lease: l, Batch: 4})
	if r.Status != pgwire.PopDelivered || fmt.Sprint(txids(r.Messages)) != "[a b c d]" || r.Cursor != 0 || r.To != 4 || r.Messages[3].Offset != 4 {
		t.Fatalf("first pop: %+v", r)
	}
	if r2 := pop(t, db, pgwire.PopRequest{Queue: "c", Partition: "p"}); r2.Status != pgwire.PopLeased {
		t.Fatalf("a second claim while the lease lives: %+v", r2)
	}
	a := ack(t, db, r.PartitionID, pgwire.QueueMode, &l, completed("a", "b")...)
	if a.Errs[0] != "" || a.Errs[1] != "" || a.Released || a.Cursor != 2 || a.Queue != "c" || a.Partition != "p" {
		t.Fatalf("partial ack: %+v", a)
	}
	// An unknown transactionId, and one not yet delivered, fail alone.
	a = ack(t, db, r.PartitionID, pgwire.QueueMode, &l, completed("zz", "e", "c", "d")...)
	if a.Errs[0] == "" || a.Errs[1] == "" || a.Errs[2] != "" || a.Errs[3] != "" || !a.Released || a.Cursor != 4 {
		t.Fatalf("rest of the batch: %+v", a)
	}
	// A wrong lease fails every item.
	other := lease()
	r = pop(t, db, pgwire.PopRequest{PartitionID: r.PartitionID, Lease: other})
	if fmt.Sprint(txids(r.Messages)) != "[e]" {
		t.Fatalf("after the cursor: %+v", r)
	}
	if a := ack(t, db, r.PartitionID, pgwire.QueueMode, &l, completed("e")...); a.Errs[0] != "lease expired or not held" {
		t.Fatalf("ack under another lease: %+v", a)
	}
	ack(t, db, r.PartitionID, pgwire.QueueMode, &other, completed("e")...)
	if r := pop(t, db, pgwire.PopRequest{Queue: "c", Partition: "p"}); r.Status != pgwire.PopEmpty {
		t.Fatalf("drained: %+v", r)
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.consumer_cursors WHERE lease_id IS NOT NULL`); n != 0 {
		t.Fatalf("an empty pop keeps its lease: %d", n)
	}
	if r := pop(t, db, pgwire.PopRequest{Queue: "c", Partition: "nope"}); r.Status != pgwire.PopMissing {
		t.Fatalf("missing partition: %+v", r)
	}
}

// An expired lease makes everything after the cursor deliverable again;
// extending only works while it lives; auto-ack moves the cursor at pop.
func TestLeaseExpiryExtendAutoAck(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	push(t, db, write("x", "p", "a", "b"))
	l := lease()
	r := pop(t, db, pgwire.PopRequest{Queue: "x", Partition: "p", Lease: l})
	at, ok, err := db.ExtendLease(ctx, [16]byte{}, l, 3600)
	if err != nil || !ok || time.Until(at) < 50*time.Minute {
		t.Fatalf("extend: %v %v %v", at, ok, err)
	}
	if _, err := db.Pool().Exec(ctx, `UPDATE queen.consumer_cursors SET lease_expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.ExtendLease(ctx, [16]byte{}, l, 60); ok {
		t.Fatal("an expired lease was extended")
	}
	r2 := pop(t, db, pgwire.PopRequest{Queue: "x", Partition: "p"})
	if r2.Status != pgwire.PopDelivered || !r2.Expired || fmt.Sprint(txids(r2.Messages)) != "[a b]" {
		t.Fatalf("after expiry: %+v", r2)
	}
	// An ack without a lease is not checked against one.
	if a := ack(t, db, r.PartitionID, pgwire.QueueMode, nil, completed("a", "b")...); a.Errs[0] != "" || !a.Released {
		t.Fatalf("ack without a lease: %+v", a)
	}
	push(t, db, write("x", "p", "c"))
	r3 := pop(t, db, pgwire.PopRequest{Queue: "x", Partition: "p", AutoAck: true, Group: "g"})
	if fmt.Sprint(txids(r3.Messages)) != "[a b c]" {
		t.Fatalf("auto-ack pop of a new group: %+v", r3)
	}
	if r := pop(t, db, pgwire.PopRequest{Queue: "x", Partition: "p", Group: "g"}); r.Status != pgwire.PopEmpty {
		t.Fatalf("after auto-ack: %+v", r)
	}
}

// failed below retryLimit releases the lease and redelivers from the
// cursor, counting; at the limit each failed message goes to the dead
// letters and is skipped; dlq at once; a completed message after a retried
// one does not move the cursor past it.
func TestFailedRetriesThenDeadLetters(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	setOptions(t, db, "f", map[string]any{"retryLimit": 2})
	push(t, db, write("f", "p", "a", "b", "c"))
	for i := 0; i < 2; i++ {
		l := lease()
		r := pop(t, db, pgwire.PopRequest{Queue: "f", Partition: "p", Lease: l})
		want, items := "[b c]", []pgwire.AckItem{{TransactionID: "b", Status: "failed", Error: "boom"}, {TransactionID: "c"}}
		if i == 0 {
			want, items = "[a b c]", append([]pgwire.AckItem{{TransactionID: "a"}}, items...)
		}
		if fmt.Sprint(txids(r.Messages)) != want {
			t.Fatalf("round %d: %+v", i, r)
		}
		a := ack(t, db, r.PartitionID, pgwire.QueueMode, &l, items...)
		if !a.Released || a.Cursor != 1 || a.DLQ[len(items)-2] || a.Errs[len(items)-1] != "" {
			t.Fatalf("round %d: %+v", i, a)
		}
	}
	l := lease()
	r := pop(t, db, pgwire.PopRequest{Queue: "f", Partition: "p", Lease: l})
	if fmt.Sprint(txids(r.Messages)) != "[b c]" {
		t.Fatalf("third delivery: %+v", r)
	}
	a := ack(t, db, r.PartitionID, pgwire.QueueMode, &l, pgwire.AckItem{TransactionID: "b", Status: "failed", Error: "boom"}, pgwire.AckItem{TransactionID: "c"})
	if !a.DLQ[0] || a.Cursor != 3 || !a.Released {
		t.Fatalf("at the limit: %+v", a)
	}
	push(t, db, write("f", "p", "d"))
	l = lease()
	r = pop(t, db, pgwire.PopRequest{Queue: "f", Partition: "p", Lease: l})
	if a := ack(t, db, r.PartitionID, pgwire.QueueMode, &l, pgwire.AckItem{TransactionID: "d", Status: "dlq", Error: "poison"}); !a.DLQ[0] || a.Cursor != 4 {
		t.Fatalf("dlq: %+v", a)
	}
	dl, total, err := db.DeadLetters(ctx, [16]byte{}, "f", "", 10, 0)
	if err != nil || total != 2 || len(dl) != 2 || dl[0].TransactionID != "b" || dl[0].Error != "boom" || dl[0].RetryCount != 2 ||
		!dl[0].Found || string(dl[0].Message.Frame.Payload) != `{"tx":"b"}` || dl[1].Offset != 4 {
		t.Fatalf("dead letters %d: %+v %v", total, dl, err)
	}
	if n := count(t, db.Pool(), `SELECT retry_count FROM queen.consumer_cursors`); n != 0 {
		t.Fatalf("retry count after the dead letter: %d", n)
	}
}

// A named group's first pop stores its choice: new starts at the current
// end of every partition, later ones included; from starts after a time;
// the stored choice wins over a later request's.
func TestSubscriptionModes(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	push(t, db, write("s", "p1", "old"))
	push(t, db, write("s", "p2", "old"))
	if r := pop(t, db, pgwire.PopRequest{Queue: "s", Partition: "p1", Group: "g-new", SubscriptionMode: "new"}); r.Status != pgwire.PopEmpty || r.Cursor != 1 {
		t.Fatalf("new on p1: %+v", r)
	}
	push(t, db, write("s", "p2", "fresh"))
	if r := pop(t, db, pgwire.PopRequest{Queue: "s", Partition: "p2", Group: "g-new"}); fmt.Sprint(txids(r.Messages)) != "[fresh]" {
		t.Fatalf("new on p2 (seeded from the stored choice): %+v", r)
	}
	if r := pop(t, db, pgwire.PopRequest{Queue: "s", Partition: "p1", Group: "g-all"}); fmt.Sprint(txids(r.Messages)) != "[old]" {
		t.Fatalf("all: %+v", r)
	}
	var cut time.Time
	if err := db.Pool().QueryRow(ctx, `SELECT created_at FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id WHERE p.name = 'p2' AND s.end_offset = 1`).Scan(&cut); err != nil {
		t.Fatal(err)
	}
	if r := pop(t, db, pgwire.PopRequest{Queue: "s", Partition: "p2", Group: "g-from", SubscriptionFrom: cut}); fmt.Sprint(txids(r.Messages)) != "[fresh]" {
		t.Fatalf("from: %+v", r)
	}
	if r := pop(t, db, pgwire.PopRequest{Queue: "s", Partition: "p1", Group: "g-from", SubscriptionMode: "all"}); r.Status != pgwire.PopEmpty {
		t.Fatalf("the stored choice wins: %+v", r)
	}
}

// delayedProcessing holds back young messages; windowBuffer skips a
// partition whose newest message is young.
func TestDelayedAndWindowBuffer(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	push(t, db, write("d", "p", "a"))
	push(t, db, write("w", "p", "a"))
	setOptions(t, db, "d", map[string]any{"delayedProcessing": 60})
	setOptions(t, db, "w", map[string]any{"windowBuffer": 60})
	if r := pop(t, db, pgwire.PopRequest{Queue: "d", Partition: "p"}); r.Status != pgwire.PopEmpty {
		t.Fatalf("delayed: %+v", r)
	}
	if r := pop(t, db, pgwire.PopRequest{Queue: "w", Partition: "p"}); r.Status != pgwire.PopWindow {
		t.Fatalf("window: %+v", r)
	}
	if _, err := db.Pool().Exec(ctx, `UPDATE queen.log_segments SET created_at = created_at - interval '2 minutes'`); err != nil {
		t.Fatal(err)
	}
	push(t, db, write("d", "p", "b"))
	if r := pop(t, db, pgwire.PopRequest{Queue: "d", Partition: "p"}); fmt.Sprint(txids(r.Messages)) != "[a]" {
		t.Fatalf("delayed, old enough: %+v", r)
	}
	if r := pop(t, db, pgwire.PopRequest{Queue: "w", Partition: "p"}); fmt.Sprint(txids(r.Messages)) != "[a]" {
		t.Fatalf("window passed: %+v", r)
	}
}

// The ack reads only the segments of the lease's delivered range: with a
// long history before the cursor and a long backlog after what the lease
// delivered, it touches as many segment rows as the lease delivered (and
// one more, the probe for the end of the range).
func TestAckReadsOnlyTheDeliveredRange(t *testing.T) {
	t.Parallel()
	// One connection: every statement of the test runs on the backend whose
	// statistics are flushed before and after the ack.
	db := openDSN1(t)
	ctx := context.Background()
	for i := 0; i < 400; i++ {
		push(t, db, write("h", "p", fmt.Sprintf("t%d", i)))
	}
	r := pop(t, db, pgwire.PopRequest{Queue: "h", Partition: "p", Batch: 190, AutoAck: true})
	if r.To != 190 {
		t.Fatalf("auto-ack pop: %+v", r)
	}
	l := lease()
	r = pop(t, db, pgwire.PopRequest{Queue: "h", Partition: "p", Batch: 3, Lease: l})
	// What the ack reads of the segment tables, from the statistics of
	// this database (a database of this test's own): index tuples fetched,
	// flushed before and after the ack by the one backend.
	conn, err := db.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	fetched := func() int64 {
		for _, q := range []string{`SELECT pg_stat_force_next_flush()`, `SELECT pg_stat_clear_snapshot()`} {
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		var n int64
		if err := conn.QueryRow(ctx, `SELECT coalesce(sum(idx_tup_fetch), 0) FROM pg_stat_user_tables
			WHERE schemaname = 'queen' AND relname IN ('log_segments', 'log_txns')`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := fetched()
	var hashes []byte
	for _, id := range []string{"t190", "t191", "t192"} {
		h := segment.Hash(id)
		hashes = append(hashes, h[:]...)
	}
	var released bool
	var cursor int64
	if err := conn.QueryRow(ctx, `SELECT o_released, o_cursor FROM queen.consumer_ack_v1('00000000-0000-0000-0000-000000000000', $1, $2, NULL, $3,
		ARRAY['completed', 'completed', 'completed'], ARRAY[NULL, NULL, NULL]::text[], ARRAY['t190', 't191', 't192'])`,
		r.PartitionID, pgwire.QueueMode, hashes).Scan(&released, &cursor); err != nil {
		t.Fatal(err)
	}
	if !released || cursor != 193 {
		t.Fatalf("ack: released %v, cursor %d", released, cursor)
	}
	// 3 segments delivered (in one of the two tables) and the probe for
	// the range's end.
	if n := fetched() - before; n > 8 {
		t.Fatalf("the ack fetched %d segment rows for 3 messages after 190, 207 more stored after them", n)
	}
}

// Retention with retainUnconsumed keeps what a group has not acknowledged;
// without it, a cursor behind retention skips to what is left.
func TestRetentionAndCursors(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	for _, q := range []string{"keep", "drop"} {
		push(t, db, write(q, "p", "a"))
		push(t, db, write(q, "p", "b"))
		if _, err := db.ConfigureQueue(ctx, [16]byte{}, q, storage.QueueUpdate{RetentionSeconds: ptr32(60), DedupWindowSeconds: ptr32(0)}); err != nil {
			t.Fatal(err)
		}
	}
	setOptions(t, db, "keep", map[string]any{"retainUnconsumed": true})
	for _, q := range []string{"keep", "drop"} {
		l := lease()
		r := pop(t, db, pgwire.PopRequest{Queue: q, Partition: "p", Batch: 1, Lease: l})
		ack(t, db, r.PartitionID, pgwire.QueueMode, &l, completed("a")...)
		pop(t, db, pgwire.PopRequest{Queue: q, Partition: "p", Batch: 1, Group: "late", AutoAck: true}) // another group, at 1
	}
	if _, err := db.Pool().Exec(ctx, `UPDATE queen.log_segments SET created_at = created_at - interval '2 minutes'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RetentionStep(ctx, 16, 1000); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'keep'`); n != 1 {
		t.Fatalf("keep: %d segments left, want 1 (b, unacknowledged)", n)
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'drop'`); n != 0 {
		t.Fatalf("drop: %d segments left", n)
	}
	push(t, db, write("drop", "p", "c"))
	if r := pop(t, db, pgwire.PopRequest{Queue: "drop", Partition: "p"}); fmt.Sprint(txids(r.Messages)) != "[c]" || r.Cursor != 1 {
		t.Fatalf("a cursor behind retention skips ahead: %+v", r)
	}
}

// Pushes, pops, acks, lease extensions and retention at once over
// overlapping partitions: no deadlock, every message acknowledged exactly
// once by the group, in order per partition.
//
// Order is judged by what the database answered, not by when a consumer
// goroutine got round to recording its batch: two consumers that popped and
// acknowledged one partition one after the other in the database may
// record in the other order. So each delivery is kept with the cursor the
// database delivered it after, and afterwards, per partition, the
// deliveries must chain from offset 0 to the last, each starting where the
// one before it ended, with the messages at their offsets in push order.
func TestConsumersUnderConcurrentWrites(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	const queue, parts, perPart = "cc", 8, 60
	if _, err := db.ConfigureQueue(ctx, [16]byte{}, queue, storage.QueueUpdate{RetentionSeconds: ptr32(3600)}); err != nil {
		t.Fatal(err)
	}
	setOptions(t, db, queue, map[string]any{"retainUnconsumed": true})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			// One writer per partition, in i order: the database gives
			// p<p>-<i> offset i+1.
			for i := 0; i < perPart; i++ {
				for p := w; p < parts; p += 4 {
					if _, err := db.PushBundle(ctx, []segment.Write{write(queue, fmt.Sprintf("p%d", p), fmt.Sprintf("p%d-%d", p, i))}); err != nil {
						errs <- err
						return
					}
				}
			}
		}(w)
	}
	stop := make(chan struct{})
	var rwg sync.WaitGroup
	rwg.Add(1)
	go func() {
		defer rwg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := db.RetentionStep(ctx, 16, 100); err != nil {
				errs <- err
				return
			}
		}
	}()
	// A delivery as the database answered it: the pop's cursor and last
	// offset, the messages with their offsets, and the cursor its ack left.
	type delivery struct {
		cursor, to int64
		msgs       []pgwire.Message
		acked      int64
		released   bool
	}
	var mu sync.Mutex // guards byPart: appends only, judged after the run
	byPart := map[string][]delivery{}
	var ackedMsgs atomic.Int64
	for c := 0; c < 6; c++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			deadline := time.Now().Add(2 * time.Minute)
			for time.Now().Before(deadline) && ackedMsgs.Load() < parts*perPart {
				l := lease()
				r, err := db.Pop(ctx, pgwire.PopRequest{Queue: queue, Partition: fmt.Sprintf("p%d", rng.Intn(parts)), Group: pgwire.QueueMode, Lease: l, Batch: 1 + rng.Intn(10)})
				if err != nil {
					errs <- err
					return
				}
				if r.Status != pgwire.PopDelivered {
					continue
				}
				if _, _, err := db.ExtendLease(ctx, [16]byte{}, l, 60); err != nil {
					errs <- err
					return
				}
				a, err := db.Ack(ctx, [16]byte{}, r.PartitionID, pgwire.QueueMode, &l, completed(txids(r.Messages)...))
				if err != nil {
					errs <- err
					return
				}
				for i, m := range r.Messages {
					if a.Errs[i] != "" {
						errs <- fmt.Errorf("ack %s: %s", m.Frame.TransactionID, a.Errs[i])
					}
				}
				ackedMsgs.Add(int64(len(r.Messages)))
				mu.Lock()
				byPart[r.Partition] = append(byPart[r.Partition], delivery{cursor: r.Cursor, to: r.To, msgs: r.Messages, acked: a.Cursor, released: a.Released})
				mu.Unlock()
			}
		}(int64(c))
	}
	wg.Wait()
	close(stop)
	rwg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for p := 0; p < parts; p++ {
		name := fmt.Sprintf("p%d", p)
		ds := byPart[name]
		// The database delivers after the cursor, so sorting by it puts
		// the deliveries in the order the database made them.
		sort.Slice(ds, func(i, j int) bool { return ds[i].cursor < ds[j].cursor })
		at := int64(0) // the cursor the next delivery must start after
		for _, d := range ds {
			if d.cursor != at {
				t.Fatalf("%s: a delivery after offset %d, where the one before ended at %d (repeated or skipped)", name, d.cursor, at)
			}
			for i, m := range d.msgs {
				off := d.cursor + 1 + int64(i)
				if m.Offset != off || m.Frame.TransactionID != fmt.Sprintf("%s-%d", name, off-1) {
					t.Fatalf("%s: delivery after %d holds %s at offset %d, want %s-%d at %d", name, d.cursor, m.Frame.TransactionID, m.Offset, name, off-1, off)
				}
			}
			if d.to != d.cursor+int64(len(d.msgs)) || !d.released || d.acked != d.to {
				t.Fatalf("%s: delivery (%d, %d] of %d messages: its ack released %v at cursor %d", name, d.cursor, d.to, len(d.msgs), d.released, d.acked)
			}
			at = d.to
		}
		if at != perPart {
			t.Fatalf("%s: deliveries reach offset %d of %d", name, at, perPart)
		}
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.consumer_cursors c JOIN queen.log_partitions p ON p.id = c.partition_id
		WHERE c.consumer_group = $1 AND c.cursor_offset = $2 AND p.last_offset = $2 AND c.lease_id IS NULL`, pgwire.QueueMode, perPart); n != parts {
		t.Fatalf("%d of %d partitions have the group's cursor at their end, no lease held", n, parts)
	}
}

// A pop bounded in bytes delivers what fits (at least one message) and
// records only that as delivered: acknowledging it releases the lease, and
// the next pop goes on after it. With auto-ack the cursor stops there too.
func TestPopBoundedInBytes(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	push(t, db, write("b", "p", "a", "b", "c", "d", "e"))
	f := segment.Frame{TransactionID: "a", Payload: []byte(`{"tx":"a"}`)}
	two := 2*pgwire.PopCost(&f, "p", pgwire.QueueMode) + 1
	l := lease()
	r := pop(t, db, pgwire.PopRequest{Queue: "b", Partition: "p", Lease: l, MaxBytes: two})
	if fmt.Sprint(txids(r.Messages)) != "[a b]" || r.To != 2 {
		t.Fatalf("bounded pop: %+v", r)
	}
	if a := ack(t, db, r.PartitionID, pgwire.QueueMode, &l, completed("a", "b")...); !a.Released || a.Cursor != 2 {
		t.Fatalf("acknowledging what the bounded pop delivered: %+v", a)
	}
	// The bound never delivers nothing.
	r = pop(t, db, pgwire.PopRequest{Queue: "b", Partition: "p", MaxBytes: 1})
	if fmt.Sprint(txids(r.Messages)) != "[c]" || r.To != 3 {
		t.Fatalf("a bound below one message: %+v", r)
	}
	r = pop(t, db, pgwire.PopRequest{Queue: "b", Partition: "p", Group: "g", AutoAck: true, MaxBytes: two})
	if fmt.Sprint(txids(r.Messages)) != "[a b]" {
		t.Fatalf("bounded auto-ack pop: %+v", r)
	}
	r = pop(t, db, pgwire.PopRequest{Queue: "b", Partition: "p", Group: "g", AutoAck: true})
	if fmt.Sprint(txids(r.Messages)) != "[c d e]" {
		t.Fatalf("auto-ack after a bounded pop skipped or repeated: %+v", r)
	}
}

// A cursor far below the first segment retention left (a group that never
// popped a partition whose early segments are gone) delivers the batch
// without sizing anything by the gap.
func TestPopAfterAGapLeftByRetention(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	push(t, db, write("gap", "p", "a", "b", "c"))
	ctx := context.Background()
	if _, err := db.Pool().Exec(ctx, `UPDATE queen.log_segments SET base_offset = base_offset + 1000000, end_offset = end_offset + 1000000`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool().Exec(ctx, `UPDATE queen.log_partitions SET last_offset = last_offset + 1000000 WHERE name = 'p'`); err != nil {
		t.Fatal(err)
	}
	r := pop(t, db, pgwire.PopRequest{Queue: "gap", Partition: "p", Batch: 2})
	if fmt.Sprint(txids(r.Messages)) != "[a b]" || r.Messages[0].Offset != 1000001 || cap(r.Messages) > 2 {
		t.Fatalf("pop after the gap: %+v (cap %d)", r, cap(r.Messages))
	}
}
