package fusion

import (
	"time"

	"github.com/queenbridge/queenbridge/fusion/recent"
	"github.com/queenbridge/queenbridge/segment"
)

// partState is one partition's state inside its shard. Only the shard
// goroutine reads or writes it.
type partState struct {
	key     partKey
	pending []item // frames waiting for the next flush, in arrival order
	// inFlight: a flush of this partition is between dispatch and the
	// completion reaching the shard. The in-flight gate.
	inFlight bool
	queued   bool // on the shard's ready list
	lastUsed time.Time
	period   uint64 // the summary period in which it was last written

	pid int64 // 0 until the first result names it
	// epoch counts the deletes of the partition's queue (forgetQueue): a
	// flush or a gap read begun under an earlier one teaches nothing.
	epoch uint64
	qid   int64 // its queue's id, from the same result
	// window is the queue's deduplication window as of the last result;
	// -1 until one arrived.
	window int32

	// verified is the highest offset V such that every frame stored at or
	// below V inside the window is known here (in recent) or older than the
	// window. latestEnd is the end of this bridge's latest committed segment.
	verified, latestEnd int64
	// gapAt is when this bridge last saw offsets written by someone else
	// (a commit that did not start at latestEnd+1); zero when no gap is open.
	// gapHi is the highest such offset. filling: their hashes are being read
	// (HashSource), after which verified can jump over them.
	gapAt   time.Time
	gapHi   int64
	filling bool

	recent recent.Table
}

func newPartState(k partKey, budget *recent.Budget) *partState {
	return &partState{key: k, window: -1, recent: recent.New(budget)}
}

func (p *partState) windowDur() time.Duration { return time.Duration(p.window) * time.Second }

// setWindow records the queue's window as the latest result reports it. A
// larger window than before brings frames back inside it that this bridge no
// longer remembers (expired under the old window, or never kept at window
// 0), although verified vouches for them. So everything up to latestEnd is
// reopened to the probe, as if another writer had written it; with a
// HashSource a fill reads it back once.
func (p *partState) setWindow(w int32, now time.Time) {
	if p.window >= 0 && w > p.window && p.latestEnd > 0 {
		p.verified = 0
		p.gapAt, p.gapHi = now, max(p.gapHi, p.latestEnd)
	}
	p.window = w
}

// committed records a queued segment at base whose frames are leaders.
func (p *partState) committed(base int64, leaders []item, window int32, now time.Time) {
	p.setWindow(window, now)
	end := base + int64(len(leaders)) - 1
	if base != p.latestEnd+1 {
		// (latestEnd, base-1] was written by another writer (another bridge,
		// or this one before a restart): SQL keeps probing it until its
		// hashes are read (fill) or it is older than the window.
		p.gapAt, p.gapHi = now, base-1
	}
	p.latestEnd = end
	if p.gapAt.IsZero() {
		p.verified = end
	}
	p.maybeCloseGap(now)
	if window > 0 {
		for k, it := range leaders {
			p.recent.Add(it.hash(), base+int64(k), now, now, p.windowDur())
		}
	} else {
		p.recent.Reset()
	}
}

// filled records the hashes stored in (lo, hi], read by a fill, and moves
// verified over them. It reports whether another gap opened meanwhile and
// needs a fill of its own.
func (p *partState) filled(hi int64, hashes []segment.HashAt, now time.Time) (again bool) {
	for _, h := range hashes {
		p.recent.Add(h.Hash, h.Offset, h.At, now, p.windowDur())
	}
	if p.gapHi <= hi {
		// Every foreign offset this bridge saw is known now; the rest up
		// to latestEnd is its own writing.
		p.verified = max(p.verified, p.latestEnd)
		p.gapAt = time.Time{}
		return false
	}
	p.verified = max(p.verified, hi)
	return true
}

// maybeCloseGap lets verified jump over foreign offsets once every one of
// them is older than the window: the probe's time cap excludes them anyway.
// Every foreign offset at or below latestEnd was written before gapAt.
func (p *partState) maybeCloseGap(now time.Time) {
	if !p.gapAt.IsZero() && p.window >= 0 && now.Sub(p.gapAt) > p.windowDur() {
		p.gapAt = time.Time{}
		p.verified = p.latestEnd
	}
}

// probeRanges sets what the next segment's probe must cover: above
// Verified (offsets this bridge has not seen), and the range of frames it
// wrote but had to forget while they may still be inside the window. The
// second range is bounded by what was forgotten, so a hot partition's probe
// does not grow with its history.
func (p *partState) probeRanges(w *segment.Write, now time.Time) {
	p.maybeCloseGap(now)
	w.Verified = p.verified
	if lo, hi := p.recent.ForgottenRange(now, p.windowDur()); hi > 0 && lo <= p.verified {
		w.ForgottenLo, w.ForgottenHi = lo-1, min(hi, p.verified)
	}
}

// localDuplicate reports the offset of a frame with hash h that this bridge
// wrote inside the window.
func (p *partState) localDuplicate(h [segment.HashSize]byte, now time.Time) (int64, bool) {
	if p.window <= 0 {
		return 0, false
	}
	return p.recent.Lookup(h, now, p.windowDur())
}
