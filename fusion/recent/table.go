package recent

import (
	"encoding/binary"
	"math"
	"sync/atomic"
	"time"

	"github.com/queenbridge/queenbridge/segment"
)

// Table is the recent-hash set as a FIFO ring of entries plus an
// open-addressing index (linear probing, backward-shift deletion). An entry
// is the 16-byte hash, its offset as 32 bits above the table's offBase, and
// its commit time as 32-bit milliseconds above the table's epoch: 24 bytes.
// An index slot is 4 bytes, an 8-bit fingerprint of the hash over the
// entry's ring position (24 bits), at a load of at most one half: 8 bytes
// per entry. A look-up that finds nothing (the common case) reads only the
// index; a fingerprint match reads the entry. The hash is already uniform
// (xxh3), so its first 8 bytes are the probe start and its last byte the
// fingerprint.
//
// Same-hash entries may coexist (a hash can be stored again once its first
// copy left the window); look-up answers the earliest one still inside the
// window.
type Table struct {
	// budget is shared by every partition's table; bytes is what this one
	// holds of it (ring and index as allocated). capacity is a hard cap on
	// entries, for tests; maxRing otherwise.
	budget   *Budget
	bytes    int64
	capacity int
	ring     []slot // circular, oldest at head
	head     int
	size     int
	index    []uint32 // 0: empty; else fingerprint<<24 | (ring position + 1)
	mask     uint64
	// offBase and epoch (unix milliseconds) are what the entries' offsets
	// and times count from; set when the table is empty, so that both
	// directions have 2^31 of room.
	offBase, epoch int64
	// forgotten records what was evicted while still inside the window
	// (see forgottenRange).
	forgotten []forgottenChunk
}

// forgottenChunk: offsets lo..hi were evicted (some of them) while inside the
// window, the newest of them added at `at`.
type forgottenChunk struct {
	lo, hi int64
	at     time.Time
	count  int
}

type slot struct {
	h   [segment.HashSize]byte
	off uint32 // offset - offBase
	at  uint32 // unix milliseconds - epoch
}

// Budget is the byte budget all recent tables of one Fusion share
// (Config.RecentHashBytes). Tables live on different shard goroutines, so
// the count is atomic; a table only ever takes or gives back its own bytes.
type Budget struct {
	limit int64
	used  atomic.Int64
}

// MinEntries is the capacity of the smallest table, and MinBytes what that
// table takes of a budget.
const (
	MinEntries = minRing
	MinBytes   = minRing*slotBytes + 2*minRing*indexBytes
)

// NewBudget is a budget of limit bytes.
func NewBudget(limit int64) *Budget { return &Budget{limit: limit} }

func (b *Budget) take(n int64) bool {
	if b.used.Add(n) > b.limit {
		b.used.Add(-n)
		return false
	}
	return true
}

func (b *Budget) give(n int64) { b.used.Add(-n) }

// Bytes per entry: a 24-byte ring slot and, at the index's load factor of at
// most one half, two 4-byte index slots. A ring holds at most maxRing
// entries (the index's 24-bit positions).
const (
	slotBytes  = 24
	indexBytes = 4
	minRing    = 64
	maxRing    = 1<<24 - 1
	half       = 1 << 31
)

// New is an empty table that takes its bytes from budget.
func New(budget *Budget) Table {
	return Table{budget: budget, capacity: maxRing}
}

func homeOf(h *[segment.HashSize]byte) uint64 { return binary.LittleEndian.Uint64(h[0:8]) }

func fpOf(h *[segment.HashSize]byte) uint32 { return uint32(h[15]) }

func (s *Table) offsetOf(sl *slot) int64 { return s.offBase + int64(sl.off) }

func (s *Table) timeOf(sl *slot) int64 { return s.epoch + int64(sl.at) }

func (s *Table) Len() int { return s.size }

// reset empties the table and gives its bytes back to the budget.
func (s *Table) Reset() {
	if s.size == 0 && s.ring == nil && s.forgotten == nil {
		return
	}
	s.budget.give(s.bytes)
	*s = Table{budget: s.budget, capacity: s.capacity}
}

// encode fits off and at into an entry. An empty table takes new bases; a
// value that does not fit the current ones (after 2^31 offsets or about 24
// days) makes the table forget what it holds, and start again from new
// bases: a one-time probe of that range instead of wrong offsets.
func (s *Table) encode(off int64, at time.Time) (uint32, uint32) {
	ms := at.UnixMilli()
	if s.size == 0 {
		s.offBase, s.epoch = off-half, ms-half
	}
	o, t := off-s.offBase, ms-s.epoch
	if o < 0 || o > math.MaxUint32 || t < 0 || t > math.MaxUint32 {
		for s.size > 0 {
			old := s.ring[s.head]
			s.pop()
			s.forget(s.offsetOf(&old), time.UnixMilli(s.timeOf(&old)))
		}
		s.offBase, s.epoch = off-half, ms-half
		o, t = half, half
	}
	return uint32(o), uint32(t)
}

// lookup answers the earliest offset stored for h inside the window.
func (s *Table) Lookup(h [segment.HashSize]byte, now time.Time, window time.Duration) (int64, bool) {
	if s.size == 0 {
		return 0, false
	}
	fp, cut := fpOf(&h), now.Add(-window).UnixMilli()
	best, found := int64(0), false
	for i := homeOf(&h) & s.mask; s.index[i] != 0; i = (i + 1) & s.mask {
		e := s.index[i]
		if e>>24 != fp {
			continue
		}
		sl := &s.ring[int(e&maxRing)-1]
		if off := s.offsetOf(sl); sl.h == h && s.timeOf(sl) >= cut && (!found || off < best) {
			best, found = off, true
		}
	}
	return best, found
}

// add records hash h stored at off, committed at `at`.
func (s *Table) Add(h [segment.HashSize]byte, off int64, at, now time.Time, window time.Duration) {
	s.Expire(now, window)
	o, t := s.encode(off, at)
	if s.size == len(s.ring) && (s.size == s.capacity || !s.resize(min(s.capacity, max(minRing, 2*len(s.ring))))) {
		// Full, and the budget (or the cap) allows no more: the oldest entry
		// is forgotten; with nothing held at all, the new one is.
		if s.size == 0 {
			s.forget(off, at)
			return
		}
		old := s.ring[s.head]
		s.pop()
		if oldAt := s.timeOf(&old); now.UnixMilli()-oldAt <= window.Milliseconds() {
			s.forget(s.offsetOf(&old), time.UnixMilli(oldAt))
		}
	}
	pos := (s.head + s.size) % len(s.ring)
	s.ring[pos] = slot{h: h, off: o, at: t}
	s.size++
	s.insert(pos)
}

// expire drops entries older than the window from the head.
func (s *Table) Expire(now time.Time, window time.Duration) {
	cut := now.Add(-window).UnixMilli()
	for s.size > 0 && s.timeOf(&s.ring[s.head]) < cut {
		s.pop()
	}
}

// insert indexes ring position pos.
func (s *Table) insert(pos int) {
	h := &s.ring[pos].h
	i := homeOf(h) & s.mask
	for s.index[i] != 0 {
		i = (i + 1) & s.mask
	}
	s.index[i] = fpOf(h)<<24 | uint32(pos+1)
}

// pop removes the head entry from the ring and the index. The index slot is
// refilled by backward shift, so probing never meets tombstones.
func (s *Table) pop() {
	pos := s.head
	want := uint32(pos + 1)
	i := homeOf(&s.ring[pos].h) & s.mask
	for s.index[i]&maxRing != want {
		i = (i + 1) & s.mask
	}
	// backward-shift deletion
	for j := (i + 1) & s.mask; s.index[j] != 0; j = (j + 1) & s.mask {
		k := homeOf(&s.ring[int(s.index[j]&maxRing)-1].h) & s.mask
		// move index[j] to i if its home k is not in (i, j] (cyclically)
		if (j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j)) {
			s.index[i] = s.index[j]
			i = j
		}
	}
	s.index[i] = 0
	s.head = (s.head + 1) % len(s.ring)
	s.size--
}

// resize moves the entries to a ring of n slots (n >= size) with an index
// to match, if the budget allows the bytes; it reports whether it did.
func (s *Table) resize(n int) bool {
	size := uint64(1)
	for size < uint64(2*n) {
		size <<= 1
	}
	want := int64(n)*slotBytes + int64(size)*indexBytes
	if want > s.bytes && !s.budget.take(want-s.bytes) {
		return false
	}
	if want < s.bytes {
		s.budget.give(s.bytes - want)
	}
	s.bytes = want
	ring := make([]slot, n)
	for i := 0; i < s.size; i++ {
		ring[i] = s.ring[(s.head+i)%len(s.ring)]
	}
	s.ring, s.head = ring, 0
	s.index, s.mask = make([]uint32, size), size-1
	for i := 0; i < s.size; i++ {
		s.insert(i)
	}
	return true
}

// shrink gives memory back once the table holds less than a quarter of its
// ring (after a burst, or as the window empties it).
func (s *Table) Shrink() {
	if len(s.ring) > minRing && s.size < len(s.ring)/4 {
		s.resize(max(minRing, 2*s.size))
	}
}

// forget notes an entry evicted while still inside the window. Chunks keep
// this coarse: each covers 1/16 of the table's size in evictions (at least
// 64 without a hard cap), so their number stays small.
func (s *Table) forget(off int64, at time.Time) {
	chunk := max(1, min(s.capacity, max(16*minRing, len(s.ring)))/16)
	if n := len(s.forgotten); n > 0 && s.forgotten[n-1].count < chunk {
		// A gap read adds older offsets after newer ones, so an eviction may
		// lie below the chunk as well as above it.
		c := &s.forgotten[n-1]
		c.at, c.count, c.lo, c.hi = at, c.count+1, min(c.lo, off), max(c.hi, off)
		return
	}
	s.forgotten = append(s.forgotten, forgottenChunk{lo: off, hi: off, at: at, count: 1})
}

// forgottenRange is [lo, hi]: the offsets of forgotten entries that may still
// be inside the window lie in it (0, 0 when there are none). A gap read adds
// older offsets after newer ones, so every live chunk is looked at.
func (s *Table) ForgottenRange(now time.Time, window time.Duration) (lo, hi int64) {
	drop := 0
	for drop < len(s.forgotten) && now.Sub(s.forgotten[drop].at) > window {
		drop++
	}
	if drop > 0 {
		s.forgotten = append(s.forgotten[:0], s.forgotten[drop:]...)
	}
	for i, c := range s.forgotten {
		if i == 0 || c.lo < lo {
			lo = c.lo
		}
		hi = max(hi, c.hi)
	}
	return lo, hi
}
