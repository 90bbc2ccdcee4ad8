package fusion

import (
	"encoding/binary"
	"time"

	"github.com/queenbridge/queenbridge/segment"
)

// recentTable is the recent-hash set as a FIFO ring of entries plus an
// open-addressing index (linear probing, backward-shift deletion). An index
// entry packs a 32-bit fingerprint of the hash with the entry's ring
// position, so a look-up that finds nothing (the common case) reads only
// the index: one cache line, where a Go map with 16-byte keys reads its
// control word and its slot. The hash is already uniform (xxh3), so its
// first 8 bytes are the probe start and its last 4 the fingerprint.
//
// Same-hash entries may coexist (a hash can be stored again once its first
// copy left the window); look-up answers the earliest one still inside the
// window.
type recentTable struct {
	capacity int
	ring     []recentSlot // circular, oldest at head
	head     int
	size     int
	index    []uint64 // 0: empty; else fingerprint<<32 | (ring position + 1)
	mask     uint64
	// forgotten records what was evicted while still inside the window
	// (see forgottenFloor).
	forgotten []forgottenChunk
}

// forgottenChunk: offsets from lo on were evicted while inside the window,
// the newest of them added at `at`.
type forgottenChunk struct {
	lo    int64
	at    time.Time
	count int
}

type recentSlot struct {
	h   [segment.HashSize]byte
	off int64
	at  int64 // unix nanoseconds
}

func newRecentTable(capacity int) recentTable { return recentTable{capacity: capacity} }

func homeOf(h *[segment.HashSize]byte) uint64 { return binary.LittleEndian.Uint64(h[0:8]) }

func fpOf(h *[segment.HashSize]byte) uint64 { return uint64(binary.LittleEndian.Uint32(h[12:16])) }

func (s *recentTable) len() int { return s.size }

func (s *recentTable) reset() {
	if s.size == 0 && s.ring == nil && s.forgotten == nil {
		return
	}
	*s = recentTable{capacity: s.capacity}
}

// lookup answers the earliest offset stored for h inside the window.
func (s *recentTable) lookup(h [segment.HashSize]byte, now time.Time, window time.Duration) (int64, bool) {
	if s.size == 0 {
		return 0, false
	}
	fp, cut := fpOf(&h), now.Add(-window).UnixNano()
	best, found := int64(0), false
	for i := homeOf(&h) & s.mask; s.index[i] != 0; i = (i + 1) & s.mask {
		e := s.index[i]
		if e>>32 != fp {
			continue
		}
		sl := &s.ring[int(uint32(e))-1]
		if sl.h == h && sl.at >= cut && (!found || sl.off < best) {
			best, found = sl.off, true
		}
	}
	return best, found
}

// add records hash h stored at off, committed at `at`.
func (s *recentTable) add(h [segment.HashSize]byte, off int64, at, now time.Time, window time.Duration) {
	s.expire(now, window)
	if s.size == s.capacity {
		old := s.ring[s.head]
		s.pop()
		if now.UnixNano()-old.at <= int64(window) {
			s.forget(old.off, time.Unix(0, old.at))
		}
	}
	if s.size == len(s.ring) {
		s.grow()
	}
	pos := (s.head + s.size) % len(s.ring)
	s.ring[pos] = recentSlot{h: h, off: off, at: at.UnixNano()}
	s.size++
	s.insert(pos)
}

// expire drops entries older than the window from the head.
func (s *recentTable) expire(now time.Time, window time.Duration) {
	cut := now.Add(-window).UnixNano()
	for s.size > 0 && s.ring[s.head].at < cut {
		s.pop()
	}
}

// insert indexes ring position pos.
func (s *recentTable) insert(pos int) {
	h := &s.ring[pos].h
	i := homeOf(h) & s.mask
	for s.index[i] != 0 {
		i = (i + 1) & s.mask
	}
	s.index[i] = fpOf(h)<<32 | uint64(pos+1)
}

// pop removes the head entry from the ring and the index. The index slot is
// refilled by backward shift, so probing never meets tombstones.
func (s *recentTable) pop() {
	pos := s.head
	want := uint64(pos + 1)
	i := homeOf(&s.ring[pos].h) & s.mask
	for uint32(s.index[i]) != uint32(want) {
		i = (i + 1) & s.mask
	}
	// backward-shift deletion
	for j := (i + 1) & s.mask; s.index[j] != 0; j = (j + 1) & s.mask {
		k := homeOf(&s.ring[int(uint32(s.index[j]))-1].h) & s.mask
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

// grow doubles the ring (up to capacity) and rebuilds the index.
func (s *recentTable) grow() {
	n := min(s.capacity, max(64, 2*len(s.ring)))
	ring := make([]recentSlot, n)
	for i := 0; i < s.size; i++ {
		ring[i] = s.ring[(s.head+i)%len(s.ring)]
	}
	s.ring, s.head = ring, 0
	size := uint64(1)
	for size < uint64(2*n) {
		size <<= 1
	}
	s.index, s.mask = make([]uint64, size), size-1
	for i := 0; i < s.size; i++ {
		s.insert(i)
	}
}

// forget notes an entry evicted while still inside the window. Chunks keep
// this coarse: each covers capacity/16 evictions.
func (s *recentTable) forget(off int64, at time.Time) {
	chunk := max(1, s.capacity/16)
	if n := len(s.forgotten); n > 0 && s.forgotten[n-1].count < chunk {
		s.forgotten[n-1].at, s.forgotten[n-1].count = at, s.forgotten[n-1].count+1
		return
	}
	s.forgotten = append(s.forgotten, forgottenChunk{lo: off, at: at, count: 1})
}

// forgottenFloor is the lowest forgotten offset that may still be inside the
// window, or 0.
func (s *recentTable) forgottenFloor(now time.Time, window time.Duration) int64 {
	drop := 0
	for drop < len(s.forgotten) && now.Sub(s.forgotten[drop].at) > window {
		drop++
	}
	if drop > 0 {
		s.forgotten = append(s.forgotten[:0], s.forgotten[drop:]...)
	}
	if len(s.forgotten) == 0 {
		return 0
	}
	return s.forgotten[0].lo
}
