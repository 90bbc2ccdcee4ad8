package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/queenbridge/queenbridge/storage"
)

func TestOffsetsStartAtOneAndAreDense(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	var wantBase int64 = 1
	for _, n := range []int{3, 1, 5, 2} {
		txids := make([]string, n)
		for i := range txids {
			txids[i] = strings.Repeat("x", int(wantBase)) + string(rune('a'+i))
		}
		res := push(t, db, write("orders.eu", "p1", txids...))[0]
		if res.Status != segment.Queued || res.BaseOffset != wantBase {
			t.Fatalf("segment of %d: got %v base %d, want queued base %d", n, res.Status, res.BaseOffset, wantBase)
		}
		last := lastOffset(t, db, "orders.eu", "p1")
		if res.BaseOffset != last-int64(n)+1 {
			t.Fatalf("base %d != last_offset %d - n %d + 1", res.BaseOffset, last, n)
		}
		if res.CreatedAt.IsZero() || res.PartitionID == 0 {
			t.Fatalf("result lacks timestamp or partition id: %+v", res)
		}
		wantBase += int64(n)
	}
	// namespace and task come from the dotted name
	var ns, task string
	if err := db.Pool().QueryRow(context.Background(), `SELECT namespace, task FROM queen.queues WHERE name = 'orders.eu'`).Scan(&ns, &task); err != nil {
		t.Fatal(err)
	}
	if ns != "orders" || task != "eu" {
		t.Fatalf("namespace %q task %q", ns, task)
	}
}

func TestResultsComeBackInInputOrder(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	// Partition ids are assigned in provisioning order (sorted), so input
	// order z, a, m differs from lock order.
	push(t, db, write("q", "a", "0"), write("q", "m", "0"), write("q", "z", "0"))
	res := push(t, db, write("q", "z", "1", "2"), write("q", "a", "1"), write("q", "m", "1", "2", "3"))
	want := []int64{2, 2, 2}
	for i, r := range res {
		if r.BaseOffset != want[i] {
			t.Fatalf("result %d base %d, want %d", i, r.BaseOffset, want[i])
		}
	}
	if lastOffset(t, db, "q", "z") != 3 || lastOffset(t, db, "q", "a") != 2 || lastOffset(t, db, "q", "m") != 4 {
		t.Fatal("last offsets do not match the segments sent")
	}
}

func TestMisalignedArraysRaiseAndWriteNothing(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	w := write("q", "p", "a")
	_, err := db.Pool().Exec(context.Background(),
		`SELECT queen.log_push_multi_v2($1, $2, $3, $4, $5, $6)`,
		[]string{"q", "q"}, []string{"p"}, []int32{1, 1}, [][]byte{w.Hashes, w.Hashes}, []int64{0, 0}, [][]byte{w.Blob, w.Blob})
	if err == nil || !strings.Contains(err.Error(), "misaligned arrays") {
		t.Fatalf("want a misaligned-arrays error, got %v", err)
	}
	if n := rowsWritten(t, db); n != 0 {
		t.Fatalf("%d rows written by a rejected bundle", n)
	}
}

func TestWrongHashStrideRaisesAndWritesNothing(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	good := write("q", "p1", "a", "b")
	bad := write("q", "p2", "c", "d")
	bad.Hashes = bad.Hashes[:31]
	rejected(t, db, "hash blob is 31 bytes", good, bad)
}

// rejected pushes writes as one bundle and wants it refused with an error
// that says want, and nothing written.
func rejected(t *testing.T, db *pgwire.DB, want string, writes ...segment.Write) {
	t.Helper()
	_, err := db.PushBundle(context.Background(), writes)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("want an error saying %q, got %v", want, err)
	}
	if n := rowsWritten(t, db); n != 0 {
		t.Fatalf("%d rows written by a rejected bundle", n)
	}
}

// TestMissingResultRaisesAndWritesNothing makes one segment's partition
// vanish between provisioning and the pre-lock (a trigger swallows its insert),
// so that segment yields no result: the completeness guard must fail the
// whole bundle.
func TestMissingResultRaisesAndWritesNothing(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	if _, err := db.Pool().Exec(ctx, `
		CREATE FUNCTION public.swallow_ghost() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN IF NEW.name = 'ghost' THEN RETURN NULL; END IF; RETURN NEW; END $$;
		CREATE TRIGGER swallow_ghost BEFORE INSERT ON queen.log_partitions
		FOR EACH ROW EXECUTE FUNCTION public.swallow_ghost();`); err != nil {
		t.Fatal(err)
	}
	rejected(t, db, "1 of 2 segments produced a result", write("q", "real", "a"), write("q", "ghost", "b"))
}

func TestDuplicateInsideWindowWritesNothingOthersCommit(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	push(t, db, write("q", "p1", "t1", "t2", "t3"))
	res := push(t, db, write("q", "p1", "t4", "t2", "t5", "t3"), write("q", "p2", "t1"))
	dup, other := res[0], res[1]
	if dup.Status != segment.Duplicate {
		t.Fatalf("want duplicate, got %v", dup.Status)
	}
	want := []segment.Dup{{Index: 1, Offset: 2}, {Index: 3, Offset: 3}}
	if len(dup.Dups) != len(want) || dup.Dups[0] != want[0] || dup.Dups[1] != want[1] {
		t.Fatalf("dups %+v, want %+v", dup.Dups, want)
	}
	if other.Status != segment.Queued || other.BaseOffset != 1 {
		t.Fatalf("other segment of the bundle: %+v", other)
	}
	if last := lastOffset(t, db, "q", "p1"); last != 3 {
		t.Fatalf("duplicate segment moved the allocator to %d", last)
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id WHERE p.name = 'p1'`); n != 1 {
		t.Fatalf("p1 has %d segments, want 1", n)
	}
}

func TestProbeBoundsWindowAndVerified(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	push(t, db, write("q", "p", "t1", "t2"))

	// verified covers offsets 1..2: the writer vouches for them, no probe.
	w := write("q", "p", "t1")
	w.Verified = 2
	if r := push(t, db, w)[0]; r.Status != segment.Queued || r.BaseOffset != 3 {
		t.Fatalf("verified=2 must skip the probe: %+v", r)
	}
	// verified below the original: found.
	w = write("q", "p", "t2")
	w.Verified = 1
	if r := push(t, db, w)[0]; r.Status != segment.Duplicate || r.Dups[0].Offset != 2 {
		t.Fatalf("verified=1 must find t2 at 2: %+v", r)
	}
	// older than the window: not found.
	if _, err := db.Pool().Exec(ctx, `UPDATE queen.log_segments SET created_at = created_at - interval '2 minutes'`); err != nil {
		t.Fatal(err)
	}
	if r := push(t, db, write("q", "p", "t2"))[0]; r.Status != segment.Queued {
		t.Fatalf("an original older than the window must not count: %+v", r)
	}
}

func TestWindowZeroSkipsProbeUnlessWidened(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	push(t, db, write("q0", "p", "t1"))
	setWindow(t, db, "q0", 0)
	if r := push(t, db, write("q0", "p", "t1"))[0]; r.Status != segment.Queued || r.BaseOffset != 2 {
		t.Fatalf("window 0 must skip the probe: %+v", r)
	}
	w := write("q0", "p", "t1")
	w.MinWindowSeconds = 60
	if r := push(t, db, w)[0]; r.Status != segment.Duplicate || r.Dups[0].Offset != 1 {
		t.Fatalf("a widened probe on window 0 must find the original at 1: %+v", r)
	}
}

func TestTenantsAreSeparate(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	a := write("orders", "p", "t1")
	b := write("orders", "p", "t1")
	b.Tenant[15] = 7
	res := push(t, db, a, b)
	if res[0].PartitionID == res[1].PartitionID || res[0].BaseOffset != 1 || res[1].BaseOffset != 1 {
		t.Fatalf("two tenants' queues of one name must be separate: %+v", res)
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.queues WHERE name = 'orders'`); n != 2 {
		t.Fatalf("%d queue rows, want 2", n)
	}
}

func TestSegmentAtUnpacksTheFrame(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	push(t, db, write("q", "p", "a", "b"))
	res := push(t, db, write("q", "p", "c", "d", "e"))[0]
	s, err := db.SegmentAt(ctx, res.PartitionID, 4)
	if err != nil {
		t.Fatal(err)
	}
	if s.BaseOffset != 3 || s.Count != 3 {
		t.Fatalf("segment covering 4: base %d count %d", s.BaseOffset, s.Count)
	}
	f, err := segment.Unpack(s.Blob, int(4-s.BaseOffset))
	if err != nil || f.TransactionID != "d" {
		t.Fatalf("frame at offset 4: %+v %v", f, err)
	}
	if _, err := db.SegmentAt(ctx, res.PartitionID, 6); !errors.Is(err, pgwire.ErrSegmentGone) {
		t.Fatalf("past the end: want ErrSegmentGone, got %v", err)
	}
}

// log_push_multi_v2 takes one segment per partition (fusion's in-flight gate
// guarantees it); a bundle naming a partition twice is refused whole.
func TestRepeatedPartitionInBundleRaisesAndWritesNothing(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	rejected(t, db, "one segment per partition per bundle", write("q", "p", "a"), write("q", "other", "b"), write("q", "p", "c"))
}

// A known partition id is checked against the names it is sent with: an id
// that names another partition fails the bundle instead of writing there.
func TestWrongPartitionIDFailsTheBundle(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	a := push(t, db, write("q", "a", "1"))[0]
	push(t, db, write("q", "b", "1"))
	w := write("q", "b", "2")
	other := push(t, db, write("q2", "b", "1"))[0]
	for _, ids := range [][2]int64{
		{a.PartitionID, a.QueueID},     // a's ids, b's name
		{a.PartitionID, 0},             // a's id alone: the general call
		{other.PartitionID, a.QueueID}, // q2/b's partition, q's queue
	} {
		w.PartitionID, w.QueueID, w.Verified = ids[0], ids[1], 1
		_, err := db.PushBundle(context.Background(), []segment.Write{w})
		if err == nil || !strings.Contains(err.Error(), "is not partition b of queue q") {
			t.Fatalf("ids %v: want a wrong-id error, got %v", ids, err)
		}
		if lastOffset(t, db, "q", "a") != 1 || lastOffset(t, db, "q", "b") != 1 || lastOffset(t, db, "q2", "b") != 1 {
			t.Fatalf("ids %v: a bundle with a wrong partition id wrote something", ids)
		}
	}
	w.QueueID, w.Verified = 0, 0
	// The right id writes, and answers like a look-up by name.
	w.PartitionID = push(t, db, write("q", "b", "3"))[0].PartitionID
	res := push(t, db, w)[0]
	if res.Status != segment.Queued || res.BaseOffset != 3 {
		t.Fatalf("with its own id: %+v", res)
	}
}

// The forgotten range is probed, and only it: a repeat inside it is a
// duplicate; a repeat below it (and below p_verified) is not looked for.
func TestForgottenRangeIsProbedAlone(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	for i := 1; i <= 6; i++ {
		push(t, db, write("q", "p", fmt.Sprintf("t%d", i)))
	}
	w := write("q", "p", "t4")
	w.Verified, w.ForgottenLo, w.ForgottenHi = 6, 2, 5 // probe (2, 5]
	if r := push(t, db, w)[0]; r.Status != segment.Duplicate || r.Dups[0].Offset != 4 {
		t.Fatalf("repeat inside the forgotten range: %+v", r)
	}
	w = write("q", "p", "t1")
	w.Verified, w.ForgottenLo, w.ForgottenHi = 6, 2, 5
	if r := push(t, db, w)[0]; r.Status != segment.Queued || r.BaseOffset != 7 {
		t.Fatalf("a frame below both ranges was looked for: %+v", r)
	}
}

// A bundle whose known segments commit while the rest fails answers the
// rest Failed, the known ones Queued, rather than an error for all: what
// committed must not be spooled and written again.
func TestHalfABundleFailsAlone(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	first := push(t, db, write("half", "known", "a"))[0]
	ok := write("half", "known", "b")
	ok.PartitionID, ok.QueueID, ok.Verified = first.PartitionID, first.QueueID, first.BaseOffset
	bad := write("half", "new", "c")
	bad.Count = 2 // the hash blob holds one frame: log_push_multi_v2 raises
	res, err := db.PushBundle(context.Background(), []segment.Write{bad, ok})
	if err != nil {
		t.Fatalf("want per-segment results, got %v", err)
	}
	if res[1].Status != segment.Queued || res[1].BaseOffset != 2 {
		t.Fatalf("the known segment: %+v", res[1])
	}
	if res[0].Status != segment.Failed || res[0].Err == nil || !strings.Contains(res[0].Err.Error(), "hash blob") {
		t.Fatalf("the failed segment: %+v", res[0])
	}
	if lastOffset(t, db, "half", "known") != 2 || count(t, db.Pool(), `SELECT count(*) FROM queen.log_partitions WHERE name = 'new'`) != 0 {
		t.Fatal("the failed half wrote something, or the known half did not")
	}
}

// The known-partition statement answers the queue's window from the
// partition row's copy of it: a configure that changes the window is seen
// by the next write, whichever bridge configured.
func TestWindowChangeReachesKnownPartitions(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	r := push(t, db, write("win", "p", "a"))[0]
	if r.WindowSeconds != 60 {
		t.Fatalf("default window %d", r.WindowSeconds)
	}
	for i, seconds := range []int32{0, 120} {
		if _, err := db.ConfigureQueue(ctx, [16]byte{}, "win", storage.QueueUpdate{DedupWindowSeconds: ptr32(seconds)}); err != nil {
			t.Fatal(err)
		}
		w := write("win", "p", fmt.Sprint("b", i))
		w.PartitionID, w.QueueID, w.Verified = r.PartitionID, r.QueueID, r.BaseOffset
		r = push(t, db, w)[0]
		if r.Status != segment.Queued || r.WindowSeconds != seconds {
			t.Fatalf("after configuring %d s: %+v", seconds, r)
		}
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
		WHERE p.dedup_window_seconds IS DISTINCT FROM q.dedup_window_seconds`); n != 0 {
		t.Fatalf("%d partitions disagree with their queue's window", n)
	}
}

// FlushLatency answers a positive duration and writes no row of the log.
func TestFlushLatencyMeasuresACommit(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	before := rowsWritten(t, db)
	d, err := db.FlushLatency(context.Background())
	if err != nil || d <= 0 || d > 10*time.Second {
		t.Fatalf("flush latency %s, %v", d, err)
	}
	if after := rowsWritten(t, db); after != before {
		t.Fatalf("measuring the flush wrote rows: %d -> %d", before, after)
	}
}

// Hash blobs written before migration 0006 are in log_txns, beside a
// segment row without one: the probe and StoredHashes read them there as
// they read the segment rows' own.
func TestHashesBeforeAndAfterTheOneRowLayout(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	old := push(t, db, write("layout", "p", "t1", "t2"))[0] // offsets 1..2
	// As a bridge before 0006 stored it: the blob in log_txns, none in the segment row.
	if _, err := db.Pool().Exec(ctx, `WITH s AS (UPDATE queen.log_segments SET hashes = NULL
			WHERE partition_id = $1 RETURNING partition_id, end_offset, base_offset, created_at)
		INSERT INTO queen.log_txns (partition_id, end_offset, base_offset, created_at, hashes)
		SELECT s.partition_id, s.end_offset, s.base_offset, s.created_at, $2 FROM s`,
		old.PartitionID, write("layout", "p", "t1", "t2").Hashes); err != nil {
		t.Fatal(err)
	}
	push(t, db, write("layout", "p", "t3")) // offset 3, the new layout

	got, err := db.StoredHashes(ctx, old.PartitionID, 1, 3, 60)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64][16]byte{2: segment.Hash("t2"), 3: segment.Hash("t3")}
	if len(got) != len(want) {
		t.Fatalf("StoredHashes (1, 3]: %d hashes, want %d: %+v", len(got), len(want), got)
	}
	for _, h := range got {
		if want[h.Offset] != h.Hash {
			t.Fatalf("offset %d: hash %x, want %x", h.Offset, h.Hash, want[h.Offset])
		}
	}
	for tx, off := range map[string]int64{"t1": 1, "t3": 3} {
		r := push(t, db, write("layout", "p", tx))[0]
		if r.Status != segment.Duplicate || r.Dups[0].Offset != off {
			t.Fatalf("a repeat of %s: %+v, want a duplicate of offset %d", tx, r, off)
		}
	}
}
