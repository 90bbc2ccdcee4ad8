package fusion

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/queenbridge/queenbridge/segment"
)

// bundle is the segments of one dispatch: one Sink call. They may come from
// several shards (the outbox).
type bundle struct {
	segs  []*segFlight
	bytes int64 // the segments' bytes as Config.BundleMaxBytes counts them
}

func (b *bundle) add(seg *segFlight) {
	b.segs = append(b.segs, seg)
	b.bytes += seg.bytes
}

// segFlight is one partition's segment from dispatch to verdict. leaders,
// followers and localDups are fixed at dispatch; part is the shard's state
// and must only be touched by the shard goroutine (in complete).
type segFlight struct {
	shard     *shard // the owner of part
	part      *partState
	pid       int64  // as known at dispatch (0 for a partition not seen yet)
	epoch     uint64 // part.epoch at dispatch
	bytes     int64  // SegmentOverhead plus the leaders' frameBytes
	write     segment.Write
	leaders   []item
	followers map[int32][]item // leader position -> same-hash frames after it
	localDups []localDup
}

// localDup is a frame this bridge already wrote at off inside the window.
type localDup struct {
	it  item
	off int64
}

func (seg *segFlight) addFollower(pos int32, it item) {
	if seg.followers == nil {
		seg.followers = map[int32][]item{}
	}
	seg.followers[pos] = append(seg.followers[pos], it)
}

// mark folds the frame's publish relay mark, if any, into the segment's
// write: stored with the segment, it says the frame is.
func (seg *segFlight) mark(it item) {
	if m := it.mark(); m.Slot != "" {
		seg.write.Marks = segment.AddMark(seg.write.Marks, m)
	}
}

// unwritten returns, in order, the leaders of a duplicate segment that were
// not duplicates, each followed by its followers: they must be written by the
// partition's next flush.
func (seg *segFlight) unwritten(dups []segment.Dup) []item {
	isDup := make(map[int]bool, len(dups))
	for _, d := range dups {
		isDup[d.Index] = true
	}
	var out []item
	for k, it := range seg.leaders {
		if !isDup[k] {
			out = append(out, it)
			out = append(out, seg.followers[int32(k)]...)
		}
	}
	return out
}

// buildWrite packs the segment's frames: the hash blob and the zstd blob.
func (seg *segFlight) buildWrite() segment.Write {
	w := seg.write
	frames := make([]segment.Frame, len(seg.leaders))
	hashes := make([]byte, 0, segment.HashSize*len(seg.leaders))
	for k, it := range seg.leaders {
		frames[k] = *it.frame()
		h := it.hash()
		hashes = append(hashes, h[:]...)
	}
	w.Count = int32(len(frames))
	w.Hashes = hashes
	w.Blob = segment.Pack(nil, frames)
	return w
}

// flush runs one bundle: pack, Sink call, completion to the shard, verdicts.
// When segments wait in the outbox at its end, the permit goes straight to
// the next bundle, which this goroutine runs in turn (next).
func (f *Fusion) flush(b *bundle) {
	defer f.flushWG.Done()
	for b != nil {
		b = f.flushOne(b)
	}
}

// flushOne runs one bundle and answers the bundle that takes over its
// permit, or nil when the permit went back.
func (f *Fusion) flushOne(b *bundle) *bundle {
	writes := make([]segment.Write, len(b.segs))
	items := 0
	for i, seg := range b.segs {
		writes[i] = seg.buildWrite()
		items += len(seg.leaders)
	}
	ctx, cancel := context.WithTimeout(f.ctx, f.cfg.FlushTimeout)
	start := time.Now()
	results, err := f.cfg.Sink.PushBundle(ctx, writes)
	took := time.Since(start)
	cancel()
	if err == nil && len(results) != len(writes) {
		err = fmt.Errorf("fusion: sink answered %d results for %d segments", len(results), len(writes))
	}
	failed := err
	for i := 0; failed == nil && i < len(results); i++ {
		if results[i].Status == segment.Failed {
			failed = results[i].Err
		}
	}
	f.stats.bundleDone(len(writes), items, took, failed)
	if f.cfg.OnBundle != nil {
		f.cfg.OnBundle(BundleInfo{Segments: len(writes), Items: items, Duration: took, Err: failed})
	}
	if failed != nil {
		f.logBundleError(failed, len(writes), items)
	}
	if fn := f.committed.Load(); fn != nil && err == nil {
		(*fn)(writes, results) // before the verdicts: a pop woken by the answer finds the segments
	}
	// Reopen the partitions only now, after the commit: the next flush of a
	// partition must not start before this one's offsets are final. Each
	// shard gets the completion of its own segments.
	byShard := map[*shard][]int{}
	for i, seg := range b.segs {
		byShard[seg.shard] = append(byShard[seg.shard], i)
	}
	reopened := &sync.WaitGroup{}
	reopened.Add(len(byShard))
	for sh, segs := range byShard {
		sh.done <- &completion{b: b, segs: segs, results: results, err: err, reopened: reopened}
	}
	// The permit goes back once every shard has reopened its partitions
	// and set out what waits on them: the next bundle then takes the
	// frames that came for this bundle's partitions while it was in
	// flight, instead of firing without them and leaving them for the
	// bundle after.
	reopened.Wait()
	if hold := f.holdAfter(took); hold > 0 {
		defer f.releaseAfter(hold, took, failed != nil)
	} else if next := f.next(took, failed != nil); next != nil {
		// The verdicts go out beside the next bundle's call, not before it.
		f.flushWG.Add(1)
		go func() {
			defer f.flushWG.Done()
			f.settle(b, results, err)
		}()
		return next
	}
	f.settle(b, results, err)
	return nil
}

// next hands the permit of a bundle that just finished to a bundle of what
// waits in the outbox, when the limit still allows it: the shards put there
// what they could not send while the permit was taken, and the bundle starts
// on this goroutine without waking a shard to fire it. Otherwise the permit
// goes back, waking the shards that wait for one, and next answers nil.
func (f *Fusion) next(took time.Duration, failed bool) *bundle {
	if f.outbox.len() == 0 || f.aborted() {
		f.limit.release(took, true, failed)
		return nil
	}
	if !f.limit.pass(took, failed) { // the limit fell under the permits in use
		return nil
	}
	b := &bundle{}
	f.outbox.take(b, f.cfg.BundleMax, f.cfg.BundleMaxBytes)
	if len(b.segs) == 0 { // another permit's bundle took them first
		f.limit.release(0, false, false)
		return nil
	}
	return b
}

// aborted says whether fusion stopped dispatching (Stop's grace is over).
func (f *Fusion) aborted() bool {
	select {
	case <-f.abort:
		return true
	default:
		return false
	}
}

// settle answers every frame of a finished bundle: err is the Sink call's.
func (f *Fusion) settle(b *bundle, results []segment.Result, err error) {
	ids := &idResolver{f: f}
	for i, seg := range b.segs {
		switch {
		case err != nil:
			seg.fail(Verdict{Status: Error, PartitionID: seg.pid, Err: err})
		case results[i].Status == segment.Failed:
			seg.fail(Verdict{Status: Error, PartitionID: seg.pid, Err: results[i].Err})
		default:
			f.settleSegment(seg, results[i], ids)
		}
		f.settleLocalDups(seg, ids)
	}
}

// fail answers every leader of the segment, and its followers, with v.
func (seg *segFlight) fail(v Verdict) {
	for k, it := range seg.leaders {
		it.req.settle(it.idx, v)
		seg.settleFollowers(int32(k), v)
	}
}

func (seg *segFlight) settleFollowers(pos int32, v Verdict) {
	for _, fl := range seg.followers[pos] {
		fl.req.settle(fl.idx, v)
	}
}

// settleSegment answers the frames of a segment that the Sink decided.
func (f *Fusion) settleSegment(seg *segFlight, r segment.Result, ids *idResolver) {
	switch r.Status {
	case segment.Queued:
		for k, it := range seg.leaders {
			off := r.BaseOffset + int64(k)
			id := it.frame().ID
			it.req.settle(it.idx, Verdict{Status: Queued, PartitionID: r.PartitionID, Offset: off, CreatedAt: r.CreatedAt, MessageID: id})
			// A repeat inside the flush is a duplicate of its leader.
			seg.settleFollowers(int32(k), Verdict{Status: Duplicate, PartitionID: r.PartitionID, Offset: off, MessageID: id})
		}
	case segment.Duplicate:
		for _, d := range r.Dups {
			if d.Index < 0 || d.Index >= len(seg.leaders) {
				continue // cannot happen with a well-formed result; the frame is requeued
			}
			it := seg.leaders[d.Index]
			v := Verdict{Status: Duplicate, PartitionID: r.PartitionID, Offset: d.Offset, MessageID: ids.id(r.PartitionID, d.Offset)}
			it.req.settle(it.idx, v)
			seg.settleFollowers(int32(d.Index), v)
		}
		// the other leaders were requeued by the shard
	}
}

// settleLocalDups answers the frames found among this bridge's own recent
// writes. The partition id is known: a local hit needs an earlier result.
func (f *Fusion) settleLocalDups(seg *segFlight, ids *idResolver) {
	for _, d := range seg.localDups {
		d.it.req.settle(d.it.idx, Verdict{Status: Duplicate, PartitionID: seg.pid, Offset: d.off, MessageID: ids.id(seg.pid, d.off)})
	}
	f.stats.localDups.Add(uint64(len(seg.localDups)))
}

// resolveAsync answers a segment that turned out to be only local duplicates:
// nothing to write, only ids to look up.
func (f *Fusion) resolveAsync(seg *segFlight) {
	f.flushWG.Add(1)
	go func() {
		defer f.flushWG.Done()
		f.settleLocalDups(seg, &idResolver{f: f})
	}()
}

// idResolver finds the message id stored at (pid, off), once per offset per
// bundle: a rare path (duplicates), so plain uncached queries are fine. A
// segment that is gone (retention) or unreadable yields the zero id.
type idResolver struct {
	f     *Fusion
	cache map[[2]int64][16]byte
}

func (r *idResolver) id(pid, off int64) [16]byte {
	k := [2]int64{pid, off}
	if id, ok := r.cache[k]; ok {
		return id
	}
	var id [16]byte
	if pid != 0 {
		ctx, cancel := context.WithTimeout(r.f.ctx, r.f.cfg.FlushTimeout)
		s, err := r.f.cfg.Sink.SegmentAt(ctx, pid, off)
		cancel()
		if err == nil {
			if fr, uerr := segment.Unpack(s.Blob, int(off-s.BaseOffset)); uerr == nil {
				id = fr.ID
			} else {
				err = uerr
			}
		}
		if err != nil {
			r.f.logIDError(err, pid, off)
		}
	}
	if r.cache == nil {
		r.cache = map[[2]int64][16]byte{}
	}
	r.cache[k] = id
	return id
}

// fill reads the hashes stored in (lo, hi] of partition pid for its shard.
// It touches no shard state: part only travels back with the result.
func (f *Fusion) fill(s *shard, part *partState, epoch uint64, pid, lo, hi int64, window int32) {
	defer f.flushWG.Done()
	ctx, cancel := context.WithTimeout(f.ctx, f.cfg.FlushTimeout)
	hashes, err := f.hashes.StoredHashes(ctx, pid, lo, hi, window)
	cancel()
	s.fills <- &fillResult{part: part, hi: hi, hashes: hashes, err: err, epoch: epoch}
}

// holdAfter is how long a bundle's permit stays taken after its commit when
// other bridges write the same database: took times the others' share of
// the time they keep bundles in flight (SetYield), so that the bridges
// together keep about as many bundles in flight as one bridge would, and
// each bundle carries what one bridge's would (docs/ownership.md).
func (f *Fusion) holdAfter(took time.Duration) time.Duration {
	y := f.yield.Load()
	if y == 0 {
		return 0
	}
	return min(time.Duration(float64(took)*float64(y)/1000), maxHold)
}

// maxHold caps the hold after one bundle.
const maxHold = 50 * time.Millisecond

// releaseAfter waits hold (cut short when fusion stops), then returns the
// permit. It runs last on the flush goroutine, after every verdict is out.
func (f *Fusion) releaseAfter(hold, took time.Duration, failed bool) {
	t := time.NewTimer(hold)
	select {
	case <-t.C:
	case <-f.stopping:
		t.Stop()
	}
	f.limit.release(took, true, failed)
}
