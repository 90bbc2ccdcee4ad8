package console

import (
	"time"
)

// sample is what the history is computed from: the counters at one time.
type sample struct {
	at                                  time.Time
	pushed, consumed, commits, segments uint64
	flush                               time.Duration
}

func sampleOf(f Figures, at time.Time) sample {
	return sample{at: at, pushed: f.Pushed, consumed: f.Consumed, commits: f.Commits, segments: f.Segments, flush: f.Flush}
}

// pointBetween is the interval (a, b] as rates: per second over its
// length, segments per commit over its commits (0 with none), and the
// flush time read at its end.
func pointBetween(a, b sample) OverviewPoint {
	p := OverviewPoint{Time: b.at, FlushMs: Millis(b.flush)}
	if secs := b.at.Sub(a.at).Seconds(); secs > 0 {
		p.PushedPerSecond = float64(delta(a.pushed, b.pushed)) / secs
		p.ConsumedPerSecond = float64(delta(a.consumed, b.consumed)) / secs
	}
	if commits := delta(a.commits, b.commits); commits > 0 {
		p.SegmentsPerCommit = float64(delta(a.segments, b.segments)) / float64(commits)
	}
	return p
}

// delta is how much a counter grew; one that moved backwards grew by 0.
func delta(a, b uint64) uint64 {
	if b < a {
		return 0
	}
	return b - a
}

// ring keeps the last len(buf) points.
type ring struct {
	buf  []OverviewPoint
	next int // where the next point goes
	n    int // points kept
}

func (r *ring) add(p OverviewPoint) {
	r.buf[r.next] = p
	r.next = (r.next + 1) % len(r.buf)
	r.n = min(r.n+1, len(r.buf))
}

// points copies the kept points out, oldest first.
func (r *ring) points() []OverviewPoint {
	out := make([]OverviewPoint, 0, r.n)
	start := (r.next - r.n + len(r.buf)) % len(r.buf)
	for i := 0; i < r.n; i++ {
		out = append(out, r.buf[(start+i)%len(r.buf)])
	}
	return out
}
