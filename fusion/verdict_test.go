package fusion

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/fusion/recent"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/segment"
)

// A duplicate in the middle of a segment: that frame is answered with the
// original's offset and id, the others are written right after, in order.
func TestDuplicateInsideSegmentRequeuesTheRest(t *testing.T) {
	sink := newMemSink(t)
	sink.foreignWrite("q", "p", "t2") // another writer stored t2 at offset 1
	f := startFusion(t, sink, nil)
	v := submit(t, f, "q", "p", "t1", "t2", "t3")
	if got := statuses(v); got != "queued@2 duplicate@1 queued@3" {
		t.Fatalf("verdicts %s", got)
	}
	if v[1].MessageID != [16]byte{0xf0, 0} {
		t.Fatalf("duplicate's id %x is not the original's", v[1].MessageID)
	}
	if f.Stats().Requeued != 2 {
		t.Fatalf("requeued %d, want 2", f.Stats().Requeued)
	}
}

// Two frames with one transactionId in one flush: the first is written, the
// second is its duplicate, whatever the window.
func TestLayer2DedupInsideAFlush(t *testing.T) {
	for _, window := range []int32{60, 0} {
		t.Run(fmt.Sprintf("window=%d", window), func(t *testing.T) {
			sink := newMemSink(t)
			sink.setWindow("q", "p", window)
			f := startFusion(t, sink, nil)
			fr := frames("a", "b", "a")
			v := wait(t, submitAsync(t, f, "q", "p", fr))
			if got := statuses(v); got != "queued@1 queued@2 duplicate@1" {
				t.Fatalf("verdicts %s", got)
			}
			if v[2].MessageID != fr[0].ID {
				t.Fatal("the follower must report its leader's id")
			}
			if sink.stored("q", "p") != 2 {
				t.Fatalf("%d frames stored, want 2", sink.stored("q", "p"))
			}
		})
	}
}

// A repeat of something this bridge wrote inside the window is answered from
// the recent-hash set: no SQL, and the next probe stays tight.
func TestLocalDuplicateNeedsNoSink(t *testing.T) {
	sink := newMemSink(t)
	f := startFusion(t, sink, nil)
	first := submit(t, f, "q", "p", "a", "b")
	calls := sink.callCount()
	v := submit(t, f, "q", "p", "b")
	if v[0].Status != Duplicate || v[0].Offset != 2 || v[0].MessageID != first[1].MessageID {
		t.Fatalf("verdict %s id %x", statuses(v), v[0].MessageID)
	}
	if sink.callCount() != calls {
		t.Fatal("a local duplicate reached the sink")
	}
	submit(t, f, "q", "p", "c")
	if got := sink.lastVerified("q", "p"); got != 2 {
		t.Fatalf("verified sent %d, want 2 (everything this bridge wrote)", got)
	}
}

// A window-0 queue keeps no recent hashes: repeats across flushes are
// written again.
func TestWindowZeroWritesRepeatsAcrossFlushes(t *testing.T) {
	sink := newMemSink(t)
	sink.setWindow("q", "p", 0)
	f := startFusion(t, sink, nil)
	submit(t, f, "q", "p", "a")
	if v := submit(t, f, "q", "p", "a"); statuses(v) != "queued@2" {
		t.Fatalf("verdict %s", statuses(v))
	}
}

func TestSinkErrorAnswersEveryParticipant(t *testing.T) {
	sink := newMemSink(t)
	boom := errors.New("boom")
	sink.fail = func(int) error { return boom }
	f := startFusion(t, sink, nil)
	v := submit(t, f, "q", "p", "a", "b", "a")
	for i, x := range v {
		if x.Status != Error || !errors.Is(x.Err, boom) {
			t.Fatalf("frame %d: %s %v", i, x.Status, x.Err)
		}
	}
	if f.Stats().BundleErrors != 1 {
		t.Fatalf("bundle errors %d", f.Stats().BundleErrors)
	}
}

// Offsets written by another writer between two of ours open a gap: verified
// stays below it, so the probe keeps covering the other writer's frames.
func TestForeignWritesKeepTheProbeOpen(t *testing.T) {
	sink := newMemSink(t)
	f := startFusion(t, sink, nil)
	submit(t, f, "q", "p", "a")      // offset 1, verified 1
	sink.foreignWrite("q", "p", "x") // offset 2, by someone else
	submit(t, f, "q", "p", "b")      // offset 3: gap at 2
	v := submit(t, f, "q", "p", "x") // must be found by the probe
	if statuses(v) != "duplicate@2" {
		t.Fatalf("verdict %s", statuses(v))
	}
	if got := sink.lastVerified("q", "p"); got != 1 {
		t.Fatalf("verified sent %d, want 1 (below the foreign offset)", got)
	}
}

// When the recent-hash sets must forget entries still inside the window, the
// probe covers what was forgotten, and only that: a repeat of a forgotten
// frame is still caught, and the probe range does not grow with history.
func TestForgottenHashesAreProbedAgain(t *testing.T) {
	sink := newMemSink(t)
	f := startFusion(t, sink, func(c *Config) { c.RecentHashBytes = recent.MinBytes })
	for i := 0; i < 100; i++ { // one table of 64 entries: the first 36 are forgotten
		submit(t, f, "q", "p", fmt.Sprintf("t%d", i))
	}
	v := submit(t, f, "q", "p", "t0")
	if statuses(v) != "duplicate@1" {
		t.Fatalf("verdict %s", statuses(v))
	}
	w := sink.lastWrite("q", "p")
	if w.Verified != 100 || w.ForgottenLo != 0 || w.ForgottenHi < 36 || w.ForgottenHi > 100-recent.MinEntries+4 {
		t.Fatalf("sent verified %d, forgotten (%d, %d]; want verified 100 and about (0, 36]", w.Verified, w.ForgottenLo, w.ForgottenHi)
	}
	// the most recent ones are still answered locally
	calls := sink.callCount()
	if v := submit(t, f, "q", "p", "t99"); statuses(v) != "duplicate@100" || sink.callCount() != calls {
		t.Fatalf("verdict %s, sink calls %d -> %d", statuses(v), calls, sink.callCount())
	}
}

// Frames whose transactionIds the bridge minted skip the probe (Verified is
// past everything) and the local check, but are still remembered: a later
// frame with a client transactionId equal to a minted one is a duplicate.
func TestMintedFramesSkipTheProbe(t *testing.T) {
	sink := newMemSink(t)
	f := startFusion(t, sink, nil)
	submit(t, f, "q", "p", "c1") // the partition has history
	ch := make(chan []Verdict, 1)
	minted := uuid.Must(uuid.NewV7()).String()
	if err := f.Submit(t.Context(), Submission{Queue: "q", Partition: "p", Frames: frames(minted, "m2"), Minted: []bool{true, true},
		Done: func(v []Verdict) { ch <- v }}); err != nil {
		t.Fatal(err)
	}
	if v := wait(t, ch); statuses(v) != "queued@2 queued@3" {
		t.Fatalf("minted: %s", statuses(v))
	}
	if w := sink.lastWrite("q", "p"); w.Verified != math.MaxInt64 || w.ForgottenHi != 0 {
		t.Fatalf("a minted-only segment sent verified %d, forgotten %d", w.Verified, w.ForgottenHi)
	}
	calls := sink.callCount()
	if v := submit(t, f, "q", "p", minted); statuses(v) != "duplicate@2" || sink.callCount() != calls {
		t.Fatalf("client reuse of a minted id: %s, sink calls %d -> %d", statuses(v), calls, sink.callCount())
	}
	if err := f.Submit(t.Context(), Submission{Queue: "q", Partition: "p", Frames: frames("x"), Minted: []bool{true, false},
		Done: func([]Verdict) {}}); err == nil {
		t.Fatal("Minted of the wrong length must be refused")
	}
}

// Replayed frames (MinWindowSeconds) are probed even on a window-0 queue.
func TestReplayedFramesAreAlwaysProbed(t *testing.T) {
	sink := newMemSink(t)
	sink.setWindow("q", "p", 0)
	f := startFusion(t, sink, nil)
	submit(t, f, "q", "p", "a")
	ch := make(chan []Verdict, 1)
	if err := f.Submit(t.Context(), Submission{Queue: "q", Partition: "p", Frames: frames("a"), MinWindowSeconds: 3600,
		Done: func(v []Verdict) { ch <- v }}); err != nil {
		t.Fatal(err)
	}
	if v := wait(t, ch); statuses(v) != "duplicate@1" {
		t.Fatalf("verdict %s", statuses(v))
	}
}

func TestTenantsAccumulateSeparately(t *testing.T) {
	sink := newMemSink(t)
	f := startFusion(t, sink, nil)
	ch := make(chan []Verdict, 2)
	for _, tenant := range [][16]byte{{}, {1}} {
		if err := f.Submit(t.Context(), Submission{Tenant: tenant, Queue: "orders", Partition: "p", Frames: frames("a"),
			Done: func(v []Verdict) { ch <- v }}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		if v := wait(t, ch); statuses(v) != "queued@1" {
			t.Fatalf("tenant %d: %s", i, statuses(v))
		}
	}
}

// Offsets written by another writer are read once (HashSource); from then on
// the probe starts above them and repeats of them are answered locally.
func TestForeignRangeIsReadOnceThenSkipped(t *testing.T) {
	sink := newMemSink(t)
	sink.foreignWrite("q", "p", "x1", "x2", "x3") // offsets 1..3, e.g. before a restart
	f := startFusion(t, hashingSink{sink}, nil)
	if v := submit(t, f, "q", "p", "a"); statuses(v) != "queued@4" {
		t.Fatalf("verdict %s", statuses(v))
	}
	if got := sink.lastVerified("q", "p"); got != 0 {
		t.Fatalf("first flush of an unseen partition sent verified %d, want 0", got)
	}
	testkit.WaitFor(t, "the gap read", 10*time.Second, func() bool { return f.Stats().Fills == 1 })
	calls := sink.callCount()
	if v := submit(t, f, "q", "p", "x2"); statuses(v) != "duplicate@2" || sink.callCount() != calls {
		t.Fatalf("a repeat of a foreign frame: %s (sink calls %d -> %d)", statuses(v), calls, sink.callCount())
	}
	submit(t, f, "q", "p", "b")
	if got := sink.lastVerified("q", "p"); got != 4 {
		t.Fatalf("verified sent %d after the gap was read, want 4", got)
	}
	if f.Stats().Fills != 1 {
		t.Fatalf("%d gap reads, want 1", f.Stats().Fills)
	}
}

// When a queue's window grows, frames this bridge forgot (or, at window 0,
// never kept) are inside the window again: the probe must cover them.
func TestWindowGrowthReopensTheProbe(t *testing.T) {
	for _, name := range []string{"plain", "hashing"} {
		t.Run(name, func(t *testing.T) {
			sink := newMemSink(t)
			var s Sink = sink
			if name == "hashing" {
				s = hashingSink{sink}
			}
			sink.setWindow("q", "p", 0)
			f := startFusion(t, s, nil)
			submit(t, f, "q", "p", "a") // window 0: not kept locally
			sink.setWindow("q", "p", 60)
			submit(t, f, "q", "p", "b") // the result tells fusion the window is 60 now
			if v := submit(t, f, "q", "p", "a"); statuses(v) != "duplicate@1" {
				t.Fatalf("a repeat after the window grew: %s, want duplicate@1", statuses(v))
			}
		})
	}
}

// failingPartSink answers the segments of one partition Failed, as the
// Sink does for the half of a bundle whose transaction failed while the
// other half committed, and passes the rest to memSink.
type failingPartSink struct {
	*memSink
	partition atomic.Pointer[string] // the test sets it between flushes
}

func (s *failingPartSink) PushBundle(ctx context.Context, writes []segment.Write) ([]segment.Result, error) {
	var keep []segment.Write
	var at []int
	failing := *s.partition.Load()
	for i, w := range writes {
		if w.Partition != failing {
			keep, at = append(keep, w), append(at, i)
		}
	}
	out := make([]segment.Result, len(writes))
	for i := range out {
		out[i] = segment.Result{Status: segment.Failed, Err: errors.New("half failed")}
	}
	if len(keep) > 0 {
		res, err := s.memSink.PushBundle(ctx, keep)
		if err != nil {
			return nil, err
		}
		for j, i := range at {
			out[i] = res[j]
		}
	}
	return out, nil
}

// A Failed segment answers its frames Error (the push call spools them) while
// the other segments of its bundle are queued, and its partition is looked
// up by name again on its next flush.
func TestFailedSegmentFailsAlone(t *testing.T) {
	mem := newMemSink(t)
	sink := &failingPartSink{memSink: mem}
	fail := func(p string) { sink.partition.Store(&p) }
	fail("bad")
	f := startFusion(t, sink, func(c *Config) { c.InFlightInitial, c.InFlightMax = 1, 1 })
	if v := submit(t, f, "q", "bad", "warm"); v[0].Status != Error {
		t.Fatalf("first flush: %+v", v[0])
	}
	fail("none")
	submit(t, f, "q", "bad", "learn") // queued: the id is known from here
	if w := mem.lastWrite("q", "bad"); w.PartitionID != 0 {
		t.Fatalf("the first queued flush sent partition id %d", w.PartitionID)
	}
	submit(t, f, "q", "bad", "known")
	if w := mem.lastWrite("q", "bad"); w.PartitionID == 0 {
		t.Fatal("a flush after a queued one did not send the partition id")
	}
	fail("bad")
	good := submitAsync(t, f, "q", "good", frames("g"))
	bad := submitAsync(t, f, "q", "bad", frames("b"))
	if v := wait(t, bad); v[0].Status != Error || v[0].Err == nil || v[0].Err.Error() != "half failed" {
		t.Fatalf("the failed segment's frame: %+v", v[0])
	}
	if v := wait(t, good); v[0].Status != Queued {
		t.Fatalf("the other segment's frame: %+v", v[0])
	}
	fail("none")
	submit(t, f, "q", "bad", "again")
	if w := mem.lastWrite("q", "bad"); w.PartitionID != 0 {
		t.Fatalf("after a Failed segment the partition id %d was sent again, not looked up by name", w.PartitionID)
	}
}
