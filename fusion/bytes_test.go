package fusion

import (
	"fmt"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testkit"
)

// checkBundleBytes fails the test if any Sink call carried more than bound
// bytes, as sent or as counted, and returns the largest counted.
func checkBundleBytes(t *testing.T, sink *memSink, bound int64) int64 {
	t.Helper()
	sent, counted := sink.callBytes()
	biggest := int64(0)
	for i := range sent {
		if sent[i] > bound || counted[i] > bound {
			t.Errorf("call %d carried %d bytes (%d counted) with BundleMaxBytes %d", i, sent[i], counted[i], bound)
		}
		biggest = max(biggest, counted[i])
	}
	return biggest
}

// Large frames waiting in many partitions, one of them holding three times
// what a bundle may carry: no bundle exceeds BundleMaxBytes, bundles still
// carry several partitions, the large partition is written over several
// flushes (never two at once: the sink fails the test otherwise), and every
// frame is queued at the offset its place in its partition gives it.
func TestBundlesNeverExceedBundleMaxBytes(t *testing.T) {
	const bound, size = 64 << 10, 3 << 10
	sink := newMemSink(t)
	sink.gate = make(chan struct{})
	f := startFusion(t, sink, func(c *Config) {
		c.Shards, c.BundleMaxBytes, c.InFlightMin, c.InFlightMax, c.InFlightInitial = 2, bound, 1, 1, 1
	})
	first := submitAsync(t, f, "q", "gate", frames("g"))
	testkit.WaitFor(t, "first bundle in the sink", 10*time.Second, func() bool { return sink.callCount() == 1 })

	type sent struct {
		part string
		ch   <-chan []Verdict
		ids  [][16]byte
	}
	var subs []*sent
	want := map[string][][16]byte{} // ids per partition, in submission order
	add := func(part string, n int) {
		var tx []string
		for i := 0; i < n; i++ {
			tx = append(tx, fmt.Sprintf("%s-%d-%d", part, len(want[part]), i))
		}
		fr := bigFrames(size, tx...)
		s := &sent{part: part, ch: submitAsync(t, f, "q", part, fr)}
		for _, x := range fr {
			s.ids = append(s.ids, x.ID)
		}
		want[part] = append(want[part], s.ids...)
		subs = append(subs, s)
	}
	for round := 0; round < 3; round++ {
		for p := 0; p < 10; p++ {
			add(fmt.Sprintf("p%d", p), 1)
		}
		add("big", 20) // 20 frames of 3 KiB fit in one bundle, 21 do not
	}
	testkit.WaitFor(t, "shards to take every submission", 10*time.Second, func() bool {
		for _, s := range f.shards {
			if len(s.in) > 0 {
				return false
			}
		}
		return true
	})
	close(sink.gate)
	wait(t, first)
	next := map[string]int64{}
	for _, s := range subs {
		for k, v := range wait(t, s.ch) {
			next[s.part]++
			if v.Status != Queued || v.Offset != next[s.part] || v.MessageID != s.ids[k] {
				t.Fatalf("%s frame %d: %s@%d, want queued@%d", s.part, k, v.Status, v.Offset, next[s.part])
			}
		}
	}
	for part, ids := range want {
		got := sink.storedIDs("q", part)
		if len(got) != len(ids) {
			t.Fatalf("%s: %d frames stored, want %d", part, len(got), len(ids))
		}
		for i := range ids {
			if got[i] != ids[i] {
				t.Fatalf("%s: offset %d holds another frame than the %dth submitted", part, i+1, i+1)
			}
		}
	}
	biggest := checkBundleBytes(t, sink, bound)
	if biggest < bound*3/4 {
		t.Errorf("largest bundle %d bytes: bundles did not fill up to the bound %d", biggest, bound)
	}
	if n := len(sink.callsWith("q", "big")); n < 3 {
		t.Errorf("the large partition went out in %d calls, want at least 3", n)
	}
	multi := false
	for _, n := range sink.bundleSizes() {
		multi = multi || n > 1
	}
	if !multi {
		t.Errorf("bundle sizes %v: no bundle carried more than one partition", sink.bundleSizes())
	}
}

// One partition's frames split over several flushes get the verdicts they
// get in one: repeats, also of frames in an earlier part and on a window-0
// queue (which keeps no recent hashes), are duplicates of the first, and the
// rest are queued in order.
func TestSplitChangesNoVerdict(t *testing.T) {
	var tx []string
	for i := 0; i < 30; i++ {
		tx = append(tx, fmt.Sprintf("t%d", i))
	}
	tx[25], tx[28] = tx[2], tx[20] // repeats: one across the split, one maybe not
	tx = append(tx, tx[0])
	fr := bigFrames(4<<10, tx...)
	run := func(t *testing.T, window int32, bound int64) ([]Verdict, int) {
		sink := newMemSink(t)
		sink.setWindow("q", "p", window)
		f := startFusion(t, sink, func(c *Config) { c.BundleMaxBytes = bound })
		v := wait(t, submitAsync(t, f, "q", "p", fr))
		checkBundleBytes(t, sink, bound)
		return v, sink.callCount()
	}
	for _, window := range []int32{60, 0} {
		t.Run(fmt.Sprintf("window=%d", window), func(t *testing.T) {
			whole, calls := run(t, window, 8<<20)
			if calls != 1 {
				t.Fatalf("%d calls without a split", calls)
			}
			split, calls := run(t, window, 32<<10)
			if calls < 3 {
				t.Fatalf("%d calls with a 32 KiB bound, want at least 3", calls)
			}
			if statuses(split) != statuses(whole) {
				t.Fatalf("verdicts split:\n%s\nwhole:\n%s", statuses(split), statuses(whole))
			}
			for i := range split {
				if split[i].MessageID != whole[i].MessageID {
					t.Fatalf("frame %d: id %x split, %x whole", i, split[i].MessageID, whole[i].MessageID)
				}
			}
			if v := split[25]; v.Status != Duplicate || v.Offset != 3 || v.MessageID != fr[2].ID {
				t.Fatalf("the repeat of t2: %s@%d", v.Status, v.Offset)
			}
		})
	}
}

// A frame larger than the bound is still written, alone in its call, in its
// place among its partition's frames.
func TestFrameLargerThanTheBoundGoesAlone(t *testing.T) {
	const bound = 16 << 10
	sink := newMemSink(t)
	sink.gate = make(chan struct{})
	f := startFusion(t, sink, func(c *Config) {
		c.Shards, c.BundleMaxBytes, c.InFlightMin, c.InFlightMax, c.InFlightInitial = 1, bound, 1, 1, 1
	})
	first := submitAsync(t, f, "q", "gate", frames("g"))
	testkit.WaitFor(t, "first bundle in the sink", 10*time.Second, func() bool { return sink.callCount() == 1 })
	fr := append(append(bigFrames(1<<10, "a"), bigFrames(100<<10, "huge")...), bigFrames(1<<10, "c")...)
	ch := submitAsync(t, f, "q", "p1", fr)
	other := submitAsync(t, f, "q", "p2", bigFrames(1<<10, "x", "y"))
	close(sink.gate)
	wait(t, first)
	if got := statuses(wait(t, ch)); got != "queued@1 queued@2 queued@3" {
		t.Fatalf("verdicts %s", got)
	}
	if got := statuses(wait(t, other)); got != "queued@1 queued@2" {
		t.Fatalf("verdicts %s", got)
	}
	sent, counted := sink.callBytes()
	alone := 0
	for i := range sent {
		if counted[i] <= bound {
			continue
		}
		sink.mu.Lock()
		writes := sink.writes[i]
		sink.mu.Unlock()
		if len(writes) != 1 || writes[0].Count != 1 || writes[0].Partition != "p1" {
			t.Fatalf("call %d carried %d bytes in %d segments: over the bound, not one frame alone", i, counted[i], len(writes))
		}
		alone++
	}
	if alone != 1 {
		t.Fatalf("%d calls over the bound, want the large frame's alone", alone)
	}
	if ids := sink.storedIDs("q", "p1"); len(ids) != 3 || ids[0] != fr[0].ID || ids[1] != fr[1].ID || ids[2] != fr[2].ID {
		t.Fatal("p1's frames are not stored in order")
	}
}
