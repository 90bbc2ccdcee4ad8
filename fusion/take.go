package fusion

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/queenbridge/queenbridge/segment"
)

// A bundle is bounded in bytes as well as in segments (Config.BundleMaxBytes):
// without it one bundle, and one partition's segment, could carry everything
// pending, up to Config.MaxPendingBytes, in one statement, one transaction and
// one allocation. The bytes are counted before compression, so the blobs
// sent are never larger than what was counted.
const (
	// FrameOverhead is what one frame adds to a bundle besides its payload,
	// transactionId and traceId: the flags (1), the message id (16), three
	// length prefixes (5 each, enough for any length below 32 GiB) and the
	// frame's entry in the hash blob (16).
	FrameOverhead = 1 + 16 + 3*5 + segment.HashSize
	// SegmentOverhead is what one segment adds: the payload blob's format
	// and codec bytes and its frame count.
	SegmentOverhead = 2 + binary.MaxVarintLen64
)

// frameBytes is what frame f counts against Config.BundleMaxBytes.
func frameBytes(f *segment.Frame) int64 {
	n := int64(len(f.Payload)+len(f.TransactionID)+len(f.TraceID)) + FrameOverhead
	if f.Subject != "" || len(f.Header) > 0 {
		n += int64(len(f.Subject)+len(f.Header)) + natsOverhead
	}
	return n
}

// natsOverhead is what a frame carrying a NATS subject and header adds
// besides their bytes: their two length prefixes.
const natsOverhead = 2 * 5

// fill adds the shard's ready partitions to b, oldest first, while b has
// room: up to BundleMax segments and BundleMaxBytes. The first segment of an
// empty bundle takes at least one frame, however large. A partition that
// does not fit stays first in line for the next bundle.
func (s *shard) fill(b *bundle, now time.Time) {
	for len(b.segs) < s.f.cfg.BundleMax && len(s.ready) > 0 {
		seg, taken := s.takeNext(now, s.f.cfg.BundleMaxBytes-b.bytes, len(b.segs) == 0)
		if seg != nil {
			b.add(seg)
		}
		if !taken {
			return
		}
	}
}

// takeAll takes every ready partition into a segment of its own bound (for
// the outbox, where the next bundle to fire packs them).
func (s *shard) takeAll(now time.Time) []*segFlight {
	var segs []*segFlight
	for len(s.ready) > 0 {
		seg, taken := s.takeNext(now, s.f.cfg.BundleMaxBytes, true)
		if seg != nil {
			segs = append(segs, seg)
		}
		if !taken {
			break // cannot happen: a forced take writes or answers a frame
		}
	}
	return segs
}

// takeNext takes the first ready partition into a segment of at most room
// bytes (force: at least one frame to write, however large). It returns the
// segment, nil when nothing is to be written (frames answered locally go to
// id resolution), and whether the partition left the ready list. It stays
// first in line when frames that did not fit are left and no flush of it is
// in flight; when one is, the rest becomes ready again at its completion, as
// frames arriving meanwhile do.
func (s *shard) takeNext(now time.Time, room int64, force bool) (*segFlight, bool) {
	p := s.ready[0]
	seg := s.take(p, now, room, force)
	if len(seg.leaders) > 0 {
		s.outstanding++
		if cur := s.f.period.Load(); p.period != cur {
			p.period = cur
			s.f.periodParts.Add(1)
		}
	} else {
		if len(seg.localDups) > 0 {
			s.f.resolveAsync(seg)
		}
		seg = nil
	}
	if len(p.pending) > 0 && !p.inFlight {
		return seg, false
	}
	s.ready[0] = nil
	s.ready = s.ready[1:]
	p.queued = false
	return seg, true
}

// take moves p's pending frames into a segment: layer-2 dedup (first of a
// hash leads, later ones follow), then the local check against what this
// bridge wrote inside the window. p goes in flight when anything is left to
// write.
//
// The segment's leaders take at most room bytes (force: at least one). The
// first frame that does not fit, and every frame after it, stay pending, in
// order, for the partition's next flush, which starts only after this one
// commits. One kind of frame is taken from beyond that cut: a repeat of a
// leader of this segment. It follows its leader, as it would have had
// everything fitted, so a split changes no verdict (on a window-0 queue the
// next flush would otherwise write it again).
func (s *shard) take(p *partState, now time.Time, room int64, force bool) *segFlight {
	seg := &segFlight{shard: s, part: p, pid: p.pid, epoch: p.epoch, bytes: SegmentOverhead, write: segment.Write{Tenant: p.key.tenant, Queue: p.key.queue, Partition: p.key.partition, PartitionID: p.pid, QueueID: p.qid}}
	// Small segments (the usual case) find an earlier leader by scanning;
	// only large ones use the shard's map. Clearing a map costs its
	// capacity, so a map that grew with one large segment is dropped rather
	// than cleared for every small one after it.
	useMap := len(p.pending) > smallSegment
	if useMap {
		clear(s.dedup)
	}
	allMinted := true
	cut := -1 // the first frame left for a later flush; -1: none
	for i, it := range p.pending {
		h := it.hash()
		if pos, ok := s.leaderOf(seg, h, useMap); ok {
			seg.addFollower(pos, it)
			seg.mark(it)
			if cut >= 0 {
				p.pending[i] = item{} // taken from beyond the cut
			}
			continue
		}
		if cut >= 0 {
			continue
		}
		if !it.minted() {
			if off, ok := p.localDuplicate(h, now); ok {
				allMinted = false
				seg.localDups = append(seg.localDups, localDup{it: it, off: off})
				continue
			}
		}
		n := frameBytes(it.frame())
		if seg.bytes+n > room && (len(seg.leaders) > 0 || !force) {
			cut = i
			continue
		}
		if !it.minted() {
			allMinted = false
		}
		if useMap {
			s.dedup[h] = int32(len(seg.leaders))
		}
		seg.leaders = append(seg.leaders, it)
		seg.mark(it)
		seg.bytes += n
		if mw := it.req.sub.MinWindowSeconds; mw > seg.write.MinWindowSeconds {
			seg.write.MinWindowSeconds = mw
		}
	}
	if len(s.dedup) > 4*smallSegment*smallSegment {
		s.dedup = map[[segment.HashSize]byte]int32{}
	}
	p.pending = keepFrom(p.pending, cut)
	switch {
	case seg.write.MinWindowSeconds > 0:
		seg.write.Verified = 0 // replayed frames: probe the whole window
	case allMinted:
		// Ids minted for this request match nothing stored (a replay of
		// them is probed above), so the probe is skipped whatever this
		// bridge remembers or forgot.
		seg.write.Verified = math.MaxInt64
	default:
		p.probeRanges(&seg.write, now)
	}
	p.inFlight = len(seg.leaders) > 0
	return seg
}

// keepFrom moves the frames from index cut on (-1: none) to the front of
// pending, in order, leaving out those taken from beyond the cut, and drops
// the other references for the collector.
func keepFrom(pending []item, cut int) []item {
	kept := 0
	if cut >= 0 {
		for _, it := range pending[cut:] {
			if it.req != nil {
				pending[kept] = it
				kept++
			}
		}
	}
	clear(pending[kept:])
	return pending[:kept]
}

// smallSegment is the size up to which take finds repeats by scanning.
const smallSegment = 16

// leaderOf finds the leader already taken into seg with hash h.
func (s *shard) leaderOf(seg *segFlight, h [segment.HashSize]byte, useMap bool) (int32, bool) {
	if useMap {
		pos, ok := s.dedup[h]
		return pos, ok
	}
	for k, l := range seg.leaders {
		if l.hash() == h {
			return int32(k), true
		}
	}
	return 0, false
}
