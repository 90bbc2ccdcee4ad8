package cursors_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/cursors"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

// tailWrite is a committed segment of n frames t<base>..t<base+n-1> of p.
func tailWrite(pid, base int64, n int) (segment.Write, segment.Result) {
	fr := make([]segment.Frame, n)
	for i := range fr {
		fr[i] = segment.Frame{ID: uuid.Must(uuid.NewV7()), TransactionID: fmt.Sprint("t", base+int64(i)), Payload: []byte(`{"x":1}`)}
	}
	w := segment.Write{Queue: "q", Partition: fmt.Sprint("p", pid), Count: int32(n), Hashes: segment.AppendHashes(nil, fr), Blob: segment.Pack(nil, fr)}
	return w, segment.Result{Status: segment.Queued, PartitionID: pid, BaseOffset: base, CreatedAt: time.Now()}
}

// commit hands the tail a bundle of segments of queue q, as the fusion's
// commit hook does, q being popped here.
func commit(t *cursors.Tail, segs ...[3]int64) {
	t.Want([16]byte{}, "q")
	var ws []segment.Write
	var rs []segment.Result
	for _, s := range segs {
		w, r := tailWrite(s[0], s[1], int(s[2]))
		ws, rs = append(ws, w), append(rs, r)
	}
	t.Committed(ws, rs)
}

func ids(from, to int64) []string {
	var out []string
	for o := from; o <= to; o++ {
		out = append(out, fmt.Sprint("t", o))
	}
	return out
}

// A take delivers what follows the group's cursor inside one contiguous
// run, cut at the batch, with the digest a pop of the same offsets records;
// a commit that does not continue the run starts a new one; a cursor
// outside the run, or unknown, takes nothing.
func TestTailTakesInsideOneContiguousRun(t *testing.T) {
	tail := cursors.NewTail(1 << 20)
	commit(tail, [3]int64{1, 1, 5}, [3]int64{1, 6, 5}, [3]int64{2, 1, 3})
	if _, ok := tail.Take(1, "g", 10); ok {
		t.Fatal("a take with no cursor known")
	}
	tail.SetCursor(1, "g", 3)
	k, ok := tail.Take(1, "g", 4)
	if !ok || k.Cursor != 3 || k.To != 7 || k.Count != 4 || k.FirstEnd != 5 || len(k.Segments) != 2 || k.Partition != "p1" {
		t.Fatalf("take: %+v %v", k, ok)
	}
	if !bytes.Equal(k.Hashes, pgwire.AckHashes(ids(4, 7))) {
		t.Fatal("the digest differs from the one of the delivered transactionIds")
	}
	k.Cut(1)
	if k.To != 4 || k.Count != 1 || len(k.Segments) != 1 || !bytes.Equal(k.Hashes, pgwire.AckHashes(ids(4, 4))) {
		t.Fatalf("cut: %+v", k)
	}
	// Another writer's segment (11..12) is not here: ours at 13 starts a new run.
	commit(tail, [3]int64{1, 13, 2})
	if _, ok := tail.Take(1, "g", 4); ok {
		t.Fatal("a take across a hole")
	}
	tail.SetCursor(1, "g", 12)
	if k, ok := tail.Take(1, "g", 10); !ok || k.To != 14 || k.Count != 2 {
		t.Fatalf("take of the new run: %+v %v", k, ok)
	}
	tail.SetCursor(1, "g", 14)
	if _, ok := tail.Take(1, "g", 10); ok {
		t.Fatal("a take with nothing after the cursor")
	}
	if pid, ok := tail.PartitionID([16]byte{}, "q", "p2"); !ok || pid != 2 {
		t.Fatalf("partition by name: %d %v", pid, ok)
	}
	if _, ok := tail.PartitionID([16]byte{}, "q", "p3"); ok {
		t.Fatal("a partition never committed here is named")
	}
}

// The tail keeps to its bound by dropping the oldest segments first, and
// a take never reaches below what it still holds.
func TestTailEvictsOldestFirst(t *testing.T) {
	tail := cursors.NewTail(4000)
	for base := int64(1); base <= 200; base += 10 {
		commit(tail, [3]int64{1, base, 10})
	}
	st := tail.Stats()
	if st.Bytes > 4000 || st.Segments == 0 || st.Segments >= 20 {
		t.Fatalf("stats after eviction: %+v", st)
	}
	tail.SetCursor(1, "g", 0)
	if _, ok := tail.Take(1, "g", 10); ok {
		t.Fatal("a take below the oldest segment held")
	}
	tail.SetCursor(1, "g", 190)
	if k, ok := tail.Take(1, "g", 100); !ok || k.To != 200 || !bytes.Equal(k.Hashes, pgwire.AckHashes(ids(191, 200))) {
		t.Fatalf("take of the newest: %+v %v", k, ok)
	}
	none := cursors.NewTail(0)
	commit(none, [3]int64{1, 1, 1})
	if st := none.Stats(); st.Segments != 0 || st.Bytes != 0 {
		t.Fatalf("a tail of 0 bytes kept something: %+v", st)
	}
}

// A segment counts its decoded frames only once a pop keeps them
// (Frames): a JetStream read decodes for itself and adds nothing, so the
// bound holds twice the segments a tail of decoded ones would. A decode
// that pushes the tail over its bound evicts the oldest, and a segment
// dropped before its decode ends adds nothing.
func TestTailCountsDecodedFramesWhenKept(t *testing.T) {
	tail := cursors.NewTail(1 << 20)
	commit(tail, [3]int64{1, 1, 10}, [3]int64{1, 11, 10})
	held := tail.Stats().Bytes
	if run, ok := tail.ReadAfter(cursors.ReadRange{PartitionID: 1, After: 0, Limit: 20}); !ok || len(run.Messages) != 20 {
		t.Fatalf("read: %d messages, %v", len(run.Messages), ok)
	}
	if st := tail.Stats(); st.Bytes != held {
		t.Fatalf("a JetStream read changed the bytes counted: %d, held %d", st.Bytes, held)
	}
	tail.SetCursor(1, "g", 0)
	k, ok := tail.Take(1, "g", 10)
	if !ok || len(k.Segments) != 1 {
		t.Fatalf("take: %+v %v", k, ok)
	}
	blob := int64(len(k.Segments[0].Blob))
	if _, err := k.Segments[0].Frames(); err != nil {
		t.Fatal(err)
	}
	if st := tail.Stats(); st.Bytes != held+blob {
		t.Fatalf("kept frames counted %d bytes, want %d + %d", st.Bytes, held, blob)
	}
	if _, err := k.Segments[0].Frames(); err != nil || tail.Stats().Bytes != held+blob {
		t.Fatalf("a second call counted the frames again: %d, %v", tail.Stats().Bytes, err)
	}
	tail.Forget(1)
	if st := tail.Stats(); st.Bytes != 0 || st.Segments != 0 {
		t.Fatalf("after forgetting the partition: %+v", st)
	}
	commit(tail, [3]int64{4, 1, 10})
	tail.SetCursor(4, "g", 0)
	k, ok = tail.Take(4, "g", 10)
	if !ok {
		t.Fatal("no take of partition 4")
	}
	tail.Forget(4)
	if _, err := k.Segments[0].Frames(); err != nil {
		t.Fatal(err)
	}
	if st := tail.Stats(); st.Bytes != 0 {
		t.Fatalf("a segment decoded after the tail dropped it counted %d bytes", st.Bytes)
	}

	// Undecoded, a bound of 20 segments' worth holds 20; decoded, about
	// half. (The segment at 191 is the largest: the longest ids.)
	commit(tail, [3]int64{2, 191, 10})
	one := tail.Stats().Bytes
	tail.Forget(2)
	small := cursors.NewTail(20 * one)
	for base := int64(1); base <= 200; base += 10 {
		commit(small, [3]int64{3, base, 10})
	}
	if st := small.Stats(); st.Segments != 20 || st.Bytes > 20*one {
		t.Fatalf("undecoded: %+v, bound %d", st, 20*one)
	}
	small.SetCursor(3, "g", 0)
	k, ok = small.Take(3, "g", 200)
	if !ok || len(k.Segments) != 20 {
		t.Fatalf("take of everything: %d segments, %v", len(k.Segments), ok)
	}
	for _, s := range k.Segments {
		if _, err := s.Frames(); err != nil {
			t.Fatal(err)
		}
	}
	st := small.Stats()
	if st.Bytes > 20*one || st.Segments >= 20 || st.Segments < 8 {
		t.Fatalf("decoded: %+v, bound %d", st, 20*one)
	}
	small.SetCursor(3, "g", 190)
	if k, ok := small.Take(3, "g", 100); !ok || k.To != 200 {
		t.Fatalf("the newest went first: %+v %v", k, ok)
	}
}

// A dropped queue's segments go; a commit of one of its partitions that
// reaches the tail afterwards is not kept; other queues stay.
func TestTailDropForgetsTheQueue(t *testing.T) {
	tail := cursors.NewTail(1 << 20)
	commit(tail, [3]int64{1, 1, 5}, [3]int64{2, 1, 3})
	other, res := tailWrite(3, 1, 2)
	other.Queue = "other"
	tail.Want([16]byte{}, "other")
	tail.Committed([]segment.Write{other}, []segment.Result{res})
	tail.Drop([16]byte{}, "q", []int64{1, 2})
	for _, p := range []string{"p1", "p2"} {
		if _, ok := tail.PartitionID([16]byte{}, "q", p); ok {
			t.Fatalf("%s is still named", p)
		}
	}
	tail.SetCursor(1, "g", 0)
	if _, ok := tail.Take(1, "g", 10); ok {
		t.Fatal("a take of a dropped partition")
	}
	commit(tail, [3]int64{1, 6, 5}) // late: committed before the delete
	if _, ok := tail.PartitionID([16]byte{}, "q", "p1"); ok {
		t.Fatal("a late commit of a dropped partition is kept")
	}
	commit(tail, [3]int64{4, 1, 1}) // the queue made anew
	if pid, ok := tail.PartitionID([16]byte{}, "q", "p4"); !ok || pid != 4 {
		t.Fatalf("a new partition of the name: %d %v", pid, ok)
	}
	if pid, ok := tail.PartitionID([16]byte{}, "other", "p3"); !ok || pid != 3 {
		t.Fatalf("the other queue: %d %v", pid, ok)
	}
	if st := tail.Stats(); st.Segments != 2 {
		t.Fatalf("%d segments held, want other's and the new one", st.Segments)
	}
}

// Commits of a queue nobody popped through this bridge are not kept; once
// a pop of it came, they are, from the next commit on (a new run).
func TestTailKeepsOnlyQueuesPoppedHere(t *testing.T) {
	tail := cursors.NewTail(1 << 20)
	w, r := tailWrite(1, 1, 3)
	tail.Committed([]segment.Write{w}, []segment.Result{r})
	if st := tail.Stats(); st.Segments != 0 || st.Bytes != 0 {
		t.Fatalf("a queue never popped here is held: %+v", st)
	}
	if _, ok := tail.PartitionID([16]byte{}, "q", "p1"); ok {
		t.Fatal("a partition of a queue never popped here is named")
	}
	tail.Want([16]byte{1}, "q") // another tenant's queue of the name
	tail.Committed([]segment.Write{w}, []segment.Result{r})
	if st := tail.Stats(); st.Segments != 0 {
		t.Fatalf("another tenant's pop made the queue wanted: %+v", st)
	}
	tail.Want([16]byte{}, "q")
	w, r = tailWrite(1, 4, 2)
	tail.Committed([]segment.Write{w}, []segment.Result{r})
	tail.SetCursor(1, "g", 3)
	take, ok := tail.Take(1, "g", 10)
	if !ok || take.Cursor != 3 || take.To != 5 || take.Count != 2 {
		t.Fatalf("take after the pop made the queue wanted: %+v %v", take, ok)
	}
	tail.SetCursor(1, "g", 0)
	if _, ok := tail.Take(1, "g", 10); ok {
		t.Fatal("a take before the run the tail holds")
	}
}

// A JetStream consumer's read is served from the run the tail holds when
// the run covers the offset after the read's: cut at the limit and at the
// byte bound, ended where the run ends; a read before the run, or past
// its end, is not served (PostgreSQL answers it).
func TestTailServesJetStreamReads(t *testing.T) {
	tail := cursors.NewTail(1 << 20)
	commit(tail, [3]int64{1, 6, 5}, [3]int64{1, 11, 5})
	txids := func(run cursors.ReadRun) []string {
		var out []string
		for _, m := range run.Messages {
			out = append(out, m.Frame.TransactionID)
		}
		return out
	}
	run, ok := tail.ReadAfter(cursors.ReadRange{PartitionID: 1, After: 7, Limit: 4})
	if !ok || fmt.Sprint(txids(run)) != fmt.Sprint(ids(8, 11)) || run.Next != 11 || run.Full {
		t.Fatalf("a read inside the run: %v next %d full %v ok %v", txids(run), run.Next, run.Full, ok)
	}
	run, ok = tail.ReadAfter(cursors.ReadRange{PartitionID: 1, After: 5, Limit: 100})
	if !ok || fmt.Sprint(txids(run)) != fmt.Sprint(ids(6, 15)) || run.Next != 15 {
		t.Fatalf("a read from the run's start to its end: %v next %d ok %v", txids(run), run.Next, ok)
	}
	each := int64(len(`{"x":1}`))
	run, ok = tail.ReadAfter(cursors.ReadRange{PartitionID: 1, After: 9, Limit: 100, MaxBytes: 2*each + 1})
	if !ok || fmt.Sprint(txids(run)) != fmt.Sprint(ids(10, 11)) || !run.Full || run.Next != 11 {
		t.Fatalf("a read cut by bytes: %v next %d full %v ok %v", txids(run), run.Next, run.Full, ok)
	}
	for _, rg := range []cursors.ReadRange{{PartitionID: 1, After: 4, Limit: 5}, {PartitionID: 1, After: 15, Limit: 5}, {PartitionID: 2, After: 0, Limit: 5}} {
		if run, ok := tail.ReadAfter(rg); ok {
			t.Fatalf("read %+v served from memory: %v", rg, txids(run))
		}
	}
	if st := tail.Stats(); st.JSReads != 3 {
		t.Fatalf("%d reads counted as served, want 3", st.JSReads)
	}
}
