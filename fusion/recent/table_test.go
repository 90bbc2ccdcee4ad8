package recent

import (
	"math"
	"math/rand"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/segment"
)

// testTable is a table capped at capacity entries, with no byte budget.
func testTable(capacity int) Table {
	return Table{budget: &Budget{limit: math.MaxInt64}, capacity: capacity}
}

// refRecent is the recent-hash set's meaning, by brute force: a FIFO list,
// and the evictions inside the window in chunks of capacity/16.
type refRecent struct {
	capacity  int
	entries   []refEntry
	forgotten []forgottenChunk
}

type refEntry struct {
	h       [16]byte
	off, at int64 // at: unix nanoseconds
}

func (r *refRecent) Add(h [16]byte, off int64, at, now time.Time, window time.Duration) {
	cut := now.Add(-window).UnixNano()
	for len(r.entries) > 0 && r.entries[0].at < cut {
		r.entries = r.entries[1:]
	}
	if len(r.entries) == r.capacity {
		old := r.entries[0]
		r.entries = r.entries[1:]
		if now.UnixNano()-old.at <= int64(window) {
			n := len(r.forgotten)
			if n > 0 && r.forgotten[n-1].count < max(1, r.capacity/16) {
				c := &r.forgotten[n-1]
				c.at, c.count, c.lo, c.hi = time.Unix(0, old.at), c.count+1, min(c.lo, old.off), max(c.hi, old.off)
			} else {
				r.forgotten = append(r.forgotten, forgottenChunk{lo: old.off, hi: old.off, at: time.Unix(0, old.at), count: 1})
			}
		}
	}
	r.entries = append(r.entries, refEntry{h: h, off: off, at: at.UnixNano()})
}

func (r *refRecent) Lookup(h [16]byte, now time.Time, window time.Duration) (int64, bool) {
	cut := now.Add(-window).UnixNano()
	best, found := int64(0), false
	for _, e := range r.entries {
		if e.h == h && e.at >= cut && (!found || e.off < best) {
			best, found = e.off, true
		}
	}
	return best, found
}

// span is the lowest and highest offset of the forgotten chunks still
// inside the window.
func (r *refRecent) span(now time.Time, window time.Duration) (lo, hi int64) {
	for len(r.forgotten) > 0 && now.Sub(r.forgotten[0].at) > window {
		r.forgotten = r.forgotten[1:]
	}
	for i, c := range r.forgotten {
		if i == 0 || c.lo < lo {
			lo = c.lo
		}
		hi = max(hi, c.hi)
	}
	return lo, hi
}

// randomHash draws from a tiny space so that probe starts, fingerprints and
// whole hashes collide often.
func randomHash(rng *rand.Rand) [segment.HashSize]byte {
	var h [16]byte
	h[0] = byte(rng.Intn(8))
	h[12] = byte(rng.Intn(3))
	h[5] = byte(rng.Intn(3))
	return h
}

// The table answers exactly what the brute-force model answers, through
// random adds (some with old timestamps, as a gap read adds), look-ups,
// evictions at capacity and expiry.
func TestRecentTableMatchesTheModel(t *testing.T) {
	for seed := int64(0); seed < 300; seed++ {
		rng := rand.New(rand.NewSource(seed))
		capacity := 1 + rng.Intn(40)
		window := time.Duration(1+rng.Intn(20)) * time.Second
		tab, ref := testTable(capacity), &refRecent{capacity: capacity}
		now := time.Unix(1_700_000_000, 0)
		off := int64(0)
		for op := 0; op < 400; op++ {
			now = now.Add(time.Duration(rng.Intn(800)) * time.Millisecond)
			h := randomHash(rng)
			switch rng.Intn(3) {
			case 0, 1:
				off++
				at := now
				if rng.Intn(5) == 0 {
					at = now.Add(-time.Duration(rng.Intn(25)) * time.Second)
				}
				tab.Add(h, off, at, now, window)
				ref.Add(h, off, at, now, window)
			case 2:
				got, gok := tab.Lookup(h, now, window)
				want, wok := ref.Lookup(h, now, window)
				if got != want || gok != wok {
					t.Fatalf("seed %d op %d: lookup %x = %d,%v; model %d,%v", seed, op, h, got, gok, want, wok)
				}
			}
			if tab.Len() != len(ref.entries) {
				t.Fatalf("seed %d op %d: %d entries, model %d", seed, op, tab.Len(), len(ref.entries))
			}
			tl, th := tab.ForgottenRange(now, window)
			if rl, rh := ref.span(now, window); tl != rl || th != rh {
				t.Fatalf("seed %d op %d: forgotten range [%d, %d], model [%d, %d]", seed, op, tl, th, rl, rh)
			}
		}
	}
}

// BenchmarkRecentSets: the memory-bound shape of a busy bridge: 100
// partitions, each holding a full window, one look-up and one add per frame.
// (A Go map keyed by the 16-byte hash, with a ring beside it, took 1.5 µs
// per frame here; this table 0.6 µs.)
func BenchmarkRecentSets(b *testing.B) {
	const parts, perPart = 100, 40000
	window := time.Hour
	now := time.Now()
	rng := rand.New(rand.NewSource(1))
	hash := func() (h [16]byte) { rng.Read(h[:]); return }
	b.Run("table", func(b *testing.B) {
		sets := make([]Table, parts)
		for p := range sets {
			sets[p] = testTable(perPart)
			for i := 0; i < perPart; i++ {
				sets[p].Add(hash(), int64(i), now, now, window)
			}
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			s := &sets[i%parts]
			h := hash()
			s.Lookup(h, now, window)
			s.Add(h, int64(perPart+i), now, now, window)
		}
		b.StopTimer()
		var bytes, entries int64
		for p := range sets {
			bytes, entries = bytes+sets[p].bytes, entries+int64(sets[p].Len())
		}
		b.ReportMetric(float64(bytes)/float64(entries), "bytes/entry")
	})
}

// Tables sharing a byte budget never hold more than it, forget what they
// cannot hold (and say which offsets), give memory back when they shrink or
// reset, and answer look-ups for what they still hold.
func TestRecentTablesShareTheBudget(t *testing.T) {
	budget := &Budget{limit: 3 * (minRing*slotBytes + 2*minRing*indexBytes)} // three tables of 64
	window := time.Minute
	now := time.Now()
	a, b := New(budget), New(budget)
	for off := int64(1); off <= 200; off++ {
		a.Add([16]byte{1, byte(off), byte(off >> 8)}, off, now, now, window)
		if used := budget.used.Load(); used > budget.limit {
			t.Fatalf("budget overdrawn: %d of %d", used, budget.limit)
		}
	}
	if a.Len() != 128 {
		t.Fatalf("a holds %d, want 128 (two thirds of the budget)", a.Len())
	}
	if lo, hi := a.ForgottenRange(now, window); lo != 1 || hi != 72 {
		t.Fatalf("a forgot [%d, %d], want [1, 72]", lo, hi)
	}
	if _, ok := a.Lookup([16]byte{1, 200}, now, window); !ok {
		t.Fatal("a lost its newest entry")
	}
	for off := int64(1); off <= 100; off++ {
		b.Add([16]byte{2, byte(off)}, off, now, now, window)
	}
	if b.Len() != 64 {
		t.Fatalf("b holds %d, want the 64 left in the budget", b.Len())
	}
	// Once a's entries leave the window, a shrinks and b may grow.
	later := now.Add(2 * window)
	a.Expire(later, window)
	a.Shrink()
	for off := int64(101); off <= 200; off++ {
		b.Add([16]byte{2, byte(off)}, off, later, later, window)
	}
	if b.Len() != 100 {
		t.Fatalf("b holds %d after a shrank, want all 100 of its window", b.Len())
	}
	a.Reset()
	b.Reset()
	if used := budget.used.Load(); used != 0 {
		t.Fatalf("%d bytes still counted after both tables reset", used)
	}
	// With no budget at all, a table remembers nothing and forgets all.
	none := New(&Budget{})
	none.Add([16]byte{9}, 5, now, now, window)
	if lo, hi := none.ForgottenRange(now, window); none.Len() != 0 || lo != 5 || hi != 5 {
		t.Fatalf("unbudgeted table: %d entries, forgot [%d, %d]", none.Len(), lo, hi)
	}
}

// An offset (or a time) too far from what the table counts from makes it
// forget what it holds, with the range recorded for the probe, and start
// again from new bases: never a wrong offset.
func TestRecentTableRebases(t *testing.T) {
	tab := testTable(100)
	now := time.Now()
	window := time.Hour
	tab.Add([16]byte{1}, 5, now, now, window)
	tab.Add([16]byte{2}, 6, now, now, window)
	far := int64(5) + 1<<33
	tab.Add([16]byte{3}, far, now, now, window)
	if off, ok := tab.Lookup([16]byte{3}, now, window); !ok || off != far {
		t.Fatalf("far entry: %d, %v", off, ok)
	}
	if _, ok := tab.Lookup([16]byte{1}, now, window); ok {
		t.Fatal("an entry from before the rebase is still answered")
	}
	if lo, hi := tab.ForgottenRange(now, window); lo != 5 || hi != 6 {
		t.Fatalf("forgotten [%d, %d], want [5, 6]", lo, hi)
	}
	later := now.Add(30 * 24 * time.Hour) // past the 32-bit milliseconds
	tab.Add([16]byte{4}, far+1, later, later, window)
	if off, ok := tab.Lookup([16]byte{4}, later, window); !ok || off != far+1 || tab.Len() != 1 {
		t.Fatalf("after 30 days: %d, %v, %d entries", off, ok, tab.Len())
	}
}

// A gap read adds entries with lower offsets after higher ones; when they are
// evicted into the same chunk, the forgotten range must still cover them.
func TestForgottenRangeCoversOlderOffsetsEvictedLater(t *testing.T) {
	tab := testTable(40) // chunks of 2 evictions
	window := time.Hour
	now := time.Now()
	tab.Add([16]byte{1}, 100, now, now, window) // this bridge's own write
	tab.Add([16]byte{2}, 5, now, now, window)   // read back from another writer
	for i := 0; i < 40; i++ {                   // push both out of the table
		tab.Add([16]byte{9, byte(i)}, int64(200+i), now, now, window)
	}
	lo, hi := tab.ForgottenRange(now, window)
	if lo > 5 || hi < 100 {
		t.Fatalf("forgotten range [%d, %d] misses offset 5 or 100", lo, hi)
	}
}
