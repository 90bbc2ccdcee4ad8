package cursors

import (
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/segment"
)

// Tail is the hot tail: the segments this bridge committed most recently,
// per partition, in memory, so that a pop of a consumer keeping up with its
// producers is served without reading segments from PostgreSQL (the consume
// room claims with pgwire.PopTail, which checks what memory cannot know).
//
// What it holds for a partition is always one contiguous run of offsets,
// (start, end]: a commit that does not continue the run (another bridge
// wrote in between, or ownership moved and came back) starts a new run. So a
// run never has a hole, and what it delivers after a cursor inside it is
// exactly what the partition holds there. What memory cannot know is
// checked by the claim, in the database: that the group's cursor is where
// the pop believes (a compare-and-set), and that retention has not removed
// the first segment delivered (it removes a partition's segments oldest
// first, so the rest are there too). A miss reads PostgreSQL as before.
//
// It keeps only the commits of queues popped through this bridge in the
// last wantFor (Want): a queue nobody consumes here costs it nothing, and
// its memory goes to those that are.
//
// Bounded in bytes (stored blob, hash blob, and the frames once a pop has
// decoded and kept them; a JetStream read decodes for itself and keeps
// nothing): the oldest segments of all partitions go first. A mutex
// guards everything; it is held for map and slice work only, never across
// a database call or a decode.
type Tail struct {
	max int64

	mu    sync.Mutex
	parts map[int64]*tailPart
	names map[partKey]int64
	order []tailRef // segments in commit order, for eviction; may hold stale refs
	bytes int64
	nsegs int
	// dropped are partitions of deleted queues (Drop): a commit to one of
	// them that reaches the tail after the delete (its flush committed
	// before it) is not kept. Ids are never reused; bounded by clearing.
	dropped map[int64]struct{}
	// wanted are the queues popped here, with the last pop's time; swept
	// is when Want last forgot those whose time had passed.
	wanted map[queueRef]time.Time
	swept  time.Time
	hits   atomic.Uint64
	misses atomic.Uint64
	jsHits atomic.Uint64 // JetStream consumer reads served (ReadAfter)
}

type tailRef struct {
	pid int64
	end int64
}

type tailPart struct {
	name partKey
	segs []*TailSegment // contiguous: segs[i+1].Base == segs[i].End+1
	// cursors are the groups' cursors as this bridge last saw them (a pop's
	// claim or an ack's answer): the tail claim's expected value.
	cursors map[string]int64
}

// TailSegment is one committed segment held in memory.
type TailSegment struct {
	Base, End int64
	CreatedAt time.Time
	Blob      []byte
	Hashes    []byte

	once    sync.Once
	frames  []segment.Frame
	err     error
	decoded atomic.Bool // once ran: frames and err are set

	// tail holds the segment: a decode kept by Frames is counted there.
	tail *Tail
	// counted is what tail.bytes counts for the segment; 0 once the tail
	// dropped it. Under tail.mu.
	counted int64
}

// Frames decodes the segment once; later calls share the frames, which
// the tail then counts in its bound.
func (s *TailSegment) Frames() ([]segment.Frame, error) {
	s.once.Do(func() {
		s.frames, s.err = segment.UnpackAll(s.Blob)
		s.decoded.Store(true)
		s.tail.keptFrames(s)
	})
	return s.frames, s.err
}

// framesOnce decodes the segment for one reader without keeping the
// frames (JetStream consumers read a segment once each: keeping its
// decoded frames would hold several times the blob's memory for the
// tail's life), unless Frames already kept them.
func (s *TailSegment) framesOnce() ([]segment.Frame, error) {
	if s.decoded.Load() {
		return s.frames, s.err
	}
	return segment.UnpackAll(s.Blob)
}

// heldSize is what the tail counts for a segment it holds undecoded.
func (s *TailSegment) heldSize() int64 {
	return int64(len(s.Blob)+len(s.Hashes)) + 128
}

// keptFrames counts s's decoded frames, about as large as its payloads
// again, while the tail still holds s, and evicts what no longer fits.
func (t *Tail) keptFrames(s *TailSegment) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if s.counted == 0 {
		return // dropped while it was decoded
	}
	n := int64(len(s.Blob))
	s.counted += n
	t.bytes += n
	t.evict()
}

// NewTail makes a tail bounded to maxBytes; 0 or less: nothing is kept.
func NewTail(maxBytes int64) *Tail {
	return &Tail{max: maxBytes, parts: map[int64]*tailPart{}, names: map[partKey]int64{}, wanted: map[queueRef]time.Time{}}
}

// wantFor is how long after a pop of a queue here the tail keeps its
// commits; past maxWanted queues remembered, Want forgets those whose time
// has passed, at most once per wantFor (so that a bridge consuming more
// queues than that does not sweep on every pop).
const (
	wantFor   = 5 * time.Minute
	maxWanted = 4096
)

// Want records a pop of the queue through this bridge: the tail keeps its
// commits from now on, until no pop of it came for wantFor. The pop itself
// reads PostgreSQL when the tail does not hold what it needs.
func (t *Tail) Want(tenant tenancy.TenantID, queue string) {
	if t == nil || t.max <= 0 {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.wanted) >= maxWanted && now.Sub(t.swept) > wantFor {
		t.swept = now
		for k, at := range t.wanted {
			if now.Sub(at) > wantFor {
				delete(t.wanted, k)
			}
		}
	}
	t.wanted[queueRef{tenant, queue}] = now
}

// Committed records the segments of a bundle this bridge committed (the
// fusion's commit hook): every Queued result with its write.
func (t *Tail) Committed(writes []segment.Write, results []segment.Result) {
	if t == nil || t.max <= 0 || len(writes) != len(results) {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range writes {
		w, r := &writes[i], &results[i]
		if r.Status != segment.Queued || r.PartitionID <= 0 || w.Count <= 0 || len(w.Hashes) != int(w.Count)*segment.HashSize {
			continue
		}
		if at, ok := t.wanted[queueRef{w.Tenant, w.Queue}]; !ok || now.Sub(at) > wantFor {
			continue // not popped here: a later commit that is kept starts a new run
		}
		if _, gone := t.dropped[r.PartitionID]; gone {
			continue
		}
		// The blob is copied: the fusion packs it into a buffer sized for
		// the frames before compression, several times what it holds.
		s := &TailSegment{Base: r.BaseOffset, End: r.BaseOffset + int64(w.Count) - 1, CreatedAt: r.CreatedAt, Blob: slices.Clone(w.Blob), Hashes: w.Hashes, tail: t}
		p := t.parts[r.PartitionID]
		if p == nil {
			p = &tailPart{name: partKey{tenant: w.Tenant, queue: w.Queue, partition: w.Partition}, cursors: map[string]int64{}}
			t.parts[r.PartitionID] = p
			t.names[p.name] = r.PartitionID
		}
		if n := len(p.segs); n > 0 && p.segs[n-1].End+1 != s.Base {
			t.dropSegs(p, n) // not a continuation: a new run
		}
		p.segs = append(p.segs, s)
		s.counted = s.heldSize()
		t.bytes += s.counted
		t.nsegs++
		t.order = append(t.order, tailRef{pid: r.PartitionID, end: s.End})
	}
	t.evict()
}

// maxDropped bounds the ids Drop remembers: a commit that reaches the
// tail later than this many deleted partitions after its delete is not a
// case to keep memory for.
const maxDropped = 1 << 16

// Drop forgets every segment of a deleted queue, and keeps partitions
// (its partitions' ids, as the delete reported them) from coming back
// with a commit that reaches the tail late. A pop then finds its
// partition by name in the database, where the queue is gone or new.
func (t *Tail) Drop(tenant tenancy.TenantID, queue string, partitions []int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.dropped)+len(partitions) > maxDropped {
		clear(t.dropped)
	}
	if t.dropped == nil {
		t.dropped = map[int64]struct{}{}
	}
	for _, pid := range partitions {
		t.dropped[pid] = struct{}{}
	}
	for pid, p := range t.parts {
		if p.name.tenant == tenant && p.name.queue == queue {
			t.dropPart(pid, p)
		}
	}
}

// Forget drops what the tail holds of a partition, as after a message of
// it was tombstoned: its readers go to PostgreSQL, which knows, until new
// commits start a run again.
func (t *Tail) Forget(pid int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.parts[pid]; p != nil {
		t.dropPart(pid, p)
	}
}

// dropPart forgets partition pid, p, with every segment it holds.
func (t *Tail) dropPart(pid int64, p *tailPart) {
	t.dropSegs(p, len(p.segs))
	delete(t.parts, pid)
	if t.names[p.name] == pid {
		delete(t.names, p.name)
	}
}

// dropSegs forgets the first n segments of p. The slice moves past them
// rather than being copied: eviction drops one segment at a time from
// partitions that may hold thousands (a bundle a millisecond makes
// segments of a message or two), and a copy each time made eviction cost
// as much as the partition held. The array keeps no dropped segment alive
// (they are cleared), and an append that outgrows it moves only the rest.
func (t *Tail) dropSegs(p *tailPart, n int) {
	for _, s := range p.segs[:n] {
		t.bytes -= s.counted
		s.counted = 0
		t.nsegs--
	}
	clear(p.segs[:n])
	p.segs = p.segs[n:]
}

// evict drops the oldest segments until the bound holds, and compacts the
// eviction order when stale references outnumber live segments.
func (t *Tail) evict() {
	k := 0
	for ; k < len(t.order) && t.bytes > t.max; k++ {
		ref := t.order[k]
		if p := t.parts[ref.pid]; p != nil && len(p.segs) > 0 && p.segs[0].End == ref.end {
			t.dropSegs(p, 1)
			if len(p.segs) == 0 {
				t.dropPart(ref.pid, p)
			}
		}
	}
	t.order = t.order[k:]
	if len(t.order) > 2*t.nsegs+1024 {
		live := t.order[:0:0]
		for _, ref := range t.order {
			if p := t.parts[ref.pid]; p != nil && p.has(ref.end) {
				live = append(live, ref)
			}
		}
		t.order = live
	}
}

func (p *tailPart) has(end int64) bool {
	i := sort.Search(len(p.segs), func(i int) bool { return p.segs[i].End >= end })
	return i < len(p.segs) && p.segs[i].End == end
}

// PartitionID is the id of a partition the tail holds, by name.
func (t *Tail) PartitionID(tenant tenancy.TenantID, queue, partition string) (int64, bool) {
	if t == nil {
		return 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	pid, ok := t.names[partKey{tenant: tenant, queue: queue, partition: partition}]
	return pid, ok
}

// SetCursor records where a group's cursor is on a partition the tail
// holds, as a claim or an ack just saw it.
func (t *Tail) SetCursor(pid int64, group string, cursor int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.parts[pid]; p != nil {
		if cursor < 0 {
			delete(p.cursors, group)
		} else if _, ok := p.cursors[group]; ok || len(p.cursors) < 64 {
			p.cursors[group] = cursor
		}
	}
}

// Pending is how many messages the tail holds after the group's cursor on
// a partition; known is false when it holds no run there or does not know
// the cursor, or the cursor is below the run (the partition may then hold
// far more, in PostgreSQL).
func (t *Tail) Pending(pid int64, group string) (n int64, known bool) {
	if t == nil {
		return 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.parts[pid]
	if p == nil || len(p.segs) == 0 {
		return 0, false
	}
	cursor, ok := p.cursors[group]
	if !ok || cursor < p.segs[0].Base-1 {
		return 0, false
	}
	return max(p.segs[len(p.segs)-1].End-cursor, 0), true
}

// TailTake is what a pop would deliver from memory: the segments after
// Cursor, whose frames (Cursor, To] are Count messages.
type TailTake struct {
	PartitionID int64
	Partition   string
	Cursor, To  int64
	Count       int
	Segments    []*TailSegment
	// FirstEnd is the end of the first segment delivered: the claim checks
	// that it is still stored.
	FirstEnd int64
	// Hashes are the delivered transactionIds' hash entries, from the hash
	// blobs (pgwire.AckHashes of them); the claim records their digest.
	Hashes []byte
}

// Take looks up what a pop of up to batch messages for group would deliver
// from memory: only when the group's cursor is known and inside the run,
// with something after it. The caller claims it (pgwire.PopTail) and counts
// the outcome (Note).
func (t *Tail) Take(pid int64, group string, batch int) (TailTake, bool) {
	if t == nil || batch <= 0 {
		return TailTake{}, false
	}
	t.mu.Lock()
	p := t.parts[pid]
	var cursor int64
	ok := p != nil && len(p.segs) > 0
	if ok {
		cursor, ok = p.cursors[group]
	}
	if !ok || cursor < p.segs[0].Base-1 || cursor >= p.segs[len(p.segs)-1].End {
		t.mu.Unlock()
		return TailTake{}, false
	}
	i := sort.Search(len(p.segs), func(i int) bool { return p.segs[i].End > cursor })
	take := TailTake{PartitionID: pid, Partition: p.name.partition, Cursor: cursor, FirstEnd: p.segs[i].End}
	for ; i < len(p.segs) && take.Count < batch; i++ {
		s := p.segs[i]
		from := max(s.Base, cursor+1)
		n := min(s.End-from+1, int64(batch-take.Count))
		take.Segments = append(take.Segments, s)
		take.Count += int(n)
		take.To = from + n - 1
	}
	t.mu.Unlock()
	take.Hashes = take.hashes(take.To)
	return take, true
}

// Cut shortens a take to its first n messages (n ≥ 1), recomputing its
// hash entries.
func (k *TailTake) Cut(n int) {
	if n <= 0 || n >= k.Count {
		return
	}
	k.To, k.Count = k.Cursor+int64(n), n
	for len(k.Segments) > 0 && k.Segments[len(k.Segments)-1].Base > k.To {
		k.Segments = k.Segments[:len(k.Segments)-1]
	}
	k.Hashes = k.hashes(k.To)
}

// hashes are the hash entries of (Cursor, to], in offset order.
func (k *TailTake) hashes(to int64) []byte {
	h := make([]byte, 0, (to-k.Cursor)*segment.HashSize)
	for _, s := range k.Segments {
		from, last := max(s.Base, k.Cursor+1), min(s.End, to)
		if last < from {
			continue
		}
		h = append(h, s.Hashes[(from-s.Base)*segment.HashSize:(last-s.Base+1)*segment.HashSize]...)
	}
	return h
}

// Note counts a pop served from memory (hit) or one that read PostgreSQL
// although the tail holds its partition (miss).
func (t *Tail) Note(hit bool) {
	if t == nil {
		return
	}
	if hit {
		t.hits.Add(1)
	} else {
		t.misses.Add(1)
	}
}

// TailStats are the tail's counters for the metrics.
type TailStats struct {
	Hits, Misses uint64
	// JSReads are JetStream consumer reads served from memory.
	JSReads  uint64
	Bytes    int64
	Segments int
}

// Stats returns a snapshot.
func (t *Tail) Stats() TailStats {
	if t == nil {
		return TailStats{}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return TailStats{Hits: t.hits.Load(), Misses: t.misses.Load(), JSReads: t.jsHits.Load(), Bytes: t.bytes, Segments: t.nsegs}
}
