package fusion_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func openDB(t testing.TB, maxConns int32) *pgwire.DB {
	t.Helper()
	db, err := pgwire.Open(context.Background(), pgwire.Config{DSN: testenv.NewDatabase(t), MaxConns: maxConns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db
}

func start(t testing.TB, sink fusion.Sink, tune func(*fusion.Config)) *fusion.Fusion {
	t.Helper()
	cfg := fusion.Config{Sink: sink, InFlightMax: 16}
	if tune != nil {
		tune(&cfg)
	}
	f, err := fusion.New(cfg)
	return testkit.Started(t, f, err)
}

func oneFrame(tx string) []segment.Frame {
	return []segment.Frame{{ID: uuid.Must(uuid.NewV7()), TransactionID: tx, Payload: []byte(`{"tx":"` + tx + `"}`)}}
}

// submitWait submits and blocks until the verdicts arrive.
func submitWait(t testing.TB, f *fusion.Fusion, q, p string, fr []segment.Frame) []fusion.Verdict {
	ch := make(chan []fusion.Verdict, 1)
	if err := f.Submit(context.Background(), fusion.Submission{Queue: q, Partition: p, Frames: fr, Done: func(v []fusion.Verdict) { ch <- v }}); err != nil {
		t.Errorf("Submit: %v", err)
		return nil
	}
	select {
	case v := <-ch:
		return v
	case <-time.After(60 * time.Second):
		t.Errorf("no verdict for %s/%s within 60s", q, p)
		return nil
	}
}

// 64 submitters of one frame each over 1,000 partitions: every frame queued,
// every partition dense, and fusion coalesces many segments per commit.
func TestManySubmittersOverManyPartitions(t *testing.T) {
	db := openDB(t, 16)
	f := start(t, db, nil)
	const submitters, each, partitions = 64, 100, 1000
	var wg sync.WaitGroup
	var mu sync.Mutex
	perPart := map[string]int{}
	for s := 0; s < submitters; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				p := fmt.Sprintf("p%d", (i*submitters+s)%partitions)
				v := submitWait(t, f, "fused", p, oneFrame(fmt.Sprintf("%d-%d", s, i)))
				if len(v) != 1 || v[0].Status != fusion.Queued {
					t.Errorf("verdict %+v", v)
					return
				}
				mu.Lock()
				perPart[p]++
				mu.Unlock()
			}
		}(s)
	}
	wg.Wait()
	st := f.Stats()
	perCommit := float64(st.Segments) / float64(st.Bundles)
	t.Logf("%d frames, %d commits, %d segments: %.1f segments per commit (in-flight limit %d)", st.ItemsFired, st.Bundles, st.Segments, perCommit, st.InFlightLimit)
	if st.BundleErrors != 0 {
		t.Fatalf("%d bundle errors", st.BundleErrors)
	}
	if perCommit <= 4 {
		t.Fatalf("%.1f segments per commit: fusion is not bundling", perCommit)
	}
	ctx := context.Background()
	var gaps, wrong int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM (
		SELECT base_offset, lag(end_offset, 1, 0::bigint) OVER (PARTITION BY partition_id ORDER BY end_offset) AS prev
		FROM queen.log_segments) s WHERE base_offset <> prev + 1`).Scan(&gaps); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Pool().Query(ctx, `SELECT name, last_offset FROM queen.log_partitions`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var name string
		var last int
		if err := rows.Scan(&name, &last); err != nil {
			t.Fatal(err)
		}
		n++
		if perPart[name] != last {
			wrong++
		}
	}
	if gaps != 0 || wrong != 0 || n != partitions {
		t.Fatalf("%d gaps, %d partitions with the wrong count, %d partitions (want %d)", gaps, wrong, n, partitions)
	}
}

// A duplicate in the middle of a segment: the original's id and offset for
// it, the others queued right after, in order.
func TestDuplicateInMiddleOfSegment(t *testing.T) {
	db := openDB(t, 4)
	orig := oneFrame("t2")
	hashes := segment.AppendHashes(nil, orig)
	if _, err := db.PushBundle(context.Background(), []segment.Write{{Queue: "q", Partition: "p", Count: 1, Hashes: hashes, Blob: segment.Pack(nil, orig)}}); err != nil {
		t.Fatal(err)
	}
	f := start(t, db, nil)
	fr := append(append(oneFrame("t1"), oneFrame("t2")...), oneFrame("t3")...)
	v := submitWait(t, f, "q", "p", fr)
	want := []struct {
		s   fusion.Status
		off int64
	}{{fusion.Queued, 2}, {fusion.Duplicate, 1}, {fusion.Queued, 3}}
	for i, w := range want {
		if v[i].Status != w.s || v[i].Offset != w.off {
			t.Fatalf("frame %d: %s@%d, want %s@%d", i, v[i].Status, v[i].Offset, w.s, w.off)
		}
	}
	if v[1].MessageID != orig[0].ID {
		t.Fatalf("duplicate reports id %x, original is %x", v[1].MessageID, orig[0].ID)
	}
	// offsets 2 and 3 hold t1 and t3, in that order
	for off, tx := range map[int64]string{2: "t1", 3: "t3"} {
		s, err := db.SegmentAt(context.Background(), v[0].PartitionID, off)
		if err != nil {
			t.Fatal(err)
		}
		fr, err := segment.Unpack(s.Blob, int(off-s.BaseOffset))
		if err != nil || fr.TransactionID != tx {
			t.Fatalf("offset %d holds %q (%v), want %q", off, fr.TransactionID, err, tx)
		}
	}
}

// A failing sink (the database is gone) answers every participant error.
func TestSinkErrorWithRealDatabase(t *testing.T) {
	db := openDB(t, 4)
	f := start(t, db, func(c *fusion.Config) { c.FlushTimeout = 5 * time.Second })
	submitWait(t, f, "q", "warm", oneFrame("w"))
	db.Close()
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			v := submitWait(t, f, "q", fmt.Sprintf("p%d", i%5), oneFrame(fmt.Sprint(i)))
			if len(v) != 1 || v[0].Status != fusion.Error || v[0].Err == nil {
				t.Errorf("verdict %+v, want error", v)
			}
		}(i)
	}
	wg.Wait()
	if st := f.Stats(); st.BundleErrors == 0 || errors.Is(nil, fusion.ErrStopped) {
		t.Fatalf("stats %+v", st)
	}
}

// A hot partition writes more than the recent-hash budget holds: the oldest
// frames are forgotten while still inside the window. A retry of one of them
// (a client transactionId) is still answered duplicate with the original's
// offset and id, by PostgreSQL's probe of the forgotten range.
func TestRetryOfForgottenTransactionIsDuplicate(t *testing.T) {
	db := openDB(t, 4)
	// room for one table of 64 entries (64 24-byte ring slots, 128 4-byte
	// index slots), not for the 128 it would grow to
	f := start(t, db, func(c *fusion.Config) { c.RecentHashBytes = 64*24 + 128*4 })
	var first []fusion.Verdict
	for i := 0; i < 300; i++ {
		v := submitWait(t, f, "hot", "p", oneFrame(fmt.Sprintf("client-%d", i)))
		if len(v) != 1 || v[0].Status != fusion.Queued {
			t.Fatalf("push %d: %+v", i, v)
		}
		if i == 0 {
			first = v
		}
	}
	for _, i := range []int{0, 100, 299} { // forgotten, forgotten, remembered
		v := submitWait(t, f, "hot", "p", oneFrame(fmt.Sprintf("client-%d", i)))
		if len(v) != 1 || v[0].Status != fusion.Duplicate || v[0].Offset != int64(i+1) {
			t.Fatalf("retry of client-%d: %+v, want duplicate at %d", i, v, i+1)
		}
		if i == 0 && v[0].MessageID != first[0].MessageID {
			t.Fatalf("retry of client-0 answered id %x, the original is %x", v[0].MessageID, first[0].MessageID)
		}
	}
	var last int64
	if err := db.Pool().QueryRow(context.Background(), `SELECT last_offset FROM queen.log_partitions WHERE name = 'p'`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	if last != 300 {
		t.Fatalf("last_offset %d after 300 pushes and 3 retries, want 300", last)
	}
}
