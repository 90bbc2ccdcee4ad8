package durability_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/durability"
	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/queenbridge/queenbridge/storage"
)

// In maintenance mode the spool takes the items (fsynced, counted in
// Stats); leaving it starts the drain, which writes every record with its
// original message id, transactionId and tenant, in spool order, and
// empties the spool.
func TestSpoolDuringMaintenanceDrainsAfter(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	sp := openSpool(t, t.TempDir())
	k := startKeeper(t, durability.Config{DB: db, Fusion: startFusion(t, db), Spool: sp, MaintenancePoll: time.Hour, DrainInterval: 10 * time.Millisecond, RetentionInterval: -1})
	if !k.CanSpool() || !k.Stats().SpoolHealthy {
		t.Fatalf("a keeper with a spool: can spool %v, %+v", k.CanSpool(), k.Stats())
	}
	ctx := context.Background()
	if err := k.SetMaintenance(ctx, true); err != nil {
		t.Fatal(err)
	}
	tenant := [16]byte{7}
	p1, p2 := frames("a", "b", "c"), frames("d")
	if err := k.Spool(ctx, tenant, failed("q", "p1", p1)); err != nil {
		t.Fatal(err)
	}
	if err := k.Spool(ctx, tenant, failed("q", "p2", p2)); err != nil {
		t.Fatal(err)
	}
	if st := k.Stats(); st.SpoolRecords != 4 || st.SpoolBytes == 0 || st.Replayed != 0 {
		t.Fatalf("after spooling 4 items in maintenance: %+v", st)
	}

	if err := k.SetMaintenance(ctx, false); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the drain to empty the spool", time.Minute, func() bool { return k.Stats().SpoolRecords == 0 })
	if st := k.Stats(); st.Replayed != 4 {
		t.Fatalf("after the drain: %+v", st)
	}
	if got := stored(t, db, tenant, "q", "p1"); !sameFrames(got, p1) {
		t.Fatalf("p1 after the drain: %+v", got)
	}
	if got := stored(t, db, tenant, "q", "p2"); !sameFrames(got, p2) {
		t.Fatalf("p2 after the drain: %+v", got)
	}
	if got := stored(t, db, [16]byte{}, "q", "p1"); len(got) != 0 {
		t.Fatalf("the default tenant's q/p1 got %d messages", len(got))
	}
}

// A record spooled after an ambiguous failure may have been committed
// after all (here by another bridge's fusion, so that this bridge's recent
// hashes do not know it): its replay is answered duplicate and removed,
// also on a queue whose deduplication window is 0, and only what was not
// stored is written.
func TestReplayOfACommittedRecordWritesNothingTwice(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	zero := int32(0)
	if _, err := db.ConfigureQueue(ctx, [16]byte{}, "w0", storage.QueueUpdate{DedupWindowSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	committed := frames("a", "b")
	other := startFusion(t, db)
	done := make(chan []fusion.Verdict, 1)
	if err := other.Submit(ctx, fusion.Submission{Queue: "w0", Partition: "p", Frames: committed, Done: func(v []fusion.Verdict) { done <- v }}); err != nil {
		t.Fatal(err)
	}
	if v := <-done; len(v) != 2 || v[0].Status != fusion.Queued || v[1].Status != fusion.Queued {
		t.Fatalf("the first write: %+v", v)
	}

	sp := openSpool(t, t.TempDir())
	k := startKeeper(t, durability.Config{DB: db, Fusion: startFusion(t, db), Spool: sp, MaintenancePoll: time.Hour, DrainInterval: 10 * time.Millisecond, RetentionInterval: -1})
	fresh := frames("c")
	spooled := append(append([]segment.Frame{}, committed...), fresh...)
	if err := k.Spool(ctx, [16]byte{}, failed("w0", "p", spooled)); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the drain to empty the spool", time.Minute, func() bool { return k.Stats().SpoolRecords == 0 })
	if st := k.Stats(); st.Replayed != 3 || st.DrainErrors != 0 {
		t.Fatalf("after the drain: %+v", st)
	}
	if got := stored(t, db, [16]byte{}, "w0", "p"); !sameFrames(got, spooled) {
		t.Fatalf("w0/p after the replay: %d messages %v", len(got), txids(got))
	}
}

// While the database does not answer, the drain stops and counts it, and
// the records stay in the spool; a keeper started later over the same
// spool drains them at once, not at its next interval.
func TestRecordsStayUntilTheDatabaseAnswers(t *testing.T) {
	t.Parallel()
	dsn := testenv.NewDatabase(t)
	ctx := context.Background()
	dir := t.TempDir()

	down := openDB(t, dsn)
	downFusion := startFusion(t, down)
	down.Close() // every call fails from here on
	sp := openSpool(t, dir)
	k, err := durability.New(durability.Config{DB: down, Fusion: downFusion, Spool: sp, MaintenancePoll: time.Hour, DrainInterval: 10 * time.Millisecond, RetentionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Start(ctx); err != nil {
		t.Fatalf("Start with the database down: %v", err)
	}
	fs := frames("a", "b")
	if err := k.Spool(ctx, [16]byte{}, failed("q", "p", fs)); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "a drain error", time.Minute, func() bool { return k.Stats().DrainErrors > 0 })
	if st := k.Stats(); st.SpoolRecords != 2 || st.Replayed != 0 {
		t.Fatalf("with the database down: %+v", st)
	}
	if err := k.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}

	up := openDB(t, dsn)
	k2 := startKeeper(t, durability.Config{DB: up, Fusion: startFusion(t, up), Spool: openSpool(t, dir), MaintenancePoll: time.Hour, DrainInterval: time.Hour, RetentionInterval: -1})
	testkit.WaitFor(t, "the restarted keeper to drain", time.Minute, func() bool { return k2.Stats().SpoolRecords == 0 })
	if got := stored(t, up, [16]byte{}, "q", "p"); !sameFrames(got, fs) {
		t.Fatalf("after the restart: %v", txids(got))
	}
}

// A keeper without a spool cannot take failed items and says so.
func TestNoSpool(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	k := startKeeper(t, durability.Config{DB: db, Fusion: startFusion(t, db), RetentionInterval: -1})
	if st := k.Stats(); k.CanSpool() || st.SpoolHealthy || st.SpoolRecords != 0 {
		t.Fatalf("without a spool: can spool %v, %+v", k.CanSpool(), st)
	}
	if _, err := durability.New(durability.Config{DB: db}); err == nil {
		t.Fatal("a keeper without fusion was accepted")
	}
}

func txids(msgs []storage.Message) string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Frame.TransactionID
	}
	return fmt.Sprint(out)
}
