package fusion

import (
	"math"
	"sync"
	"time"
)

// inflightLimit is the limit of the push lane: how many bundles may be in
// flight at once, shared by every shard. (It replaced a TCP-Vegas estimator,
// which held one bundle in flight whenever bundles left with room, so the
// settings and one metric still carry that name as deprecated aliases.)
// The rule follows what a bundle's commit waits on (docs/fusion.md,
// "Bundles in flight"):
//
//   - F, the time PostgreSQL takes to flush a commit to disk, measured every
//     few seconds by the Sink (FlushMeter) as a one-row commit's round trip
//     less a read's, the lowest reading of the last twelve;
//   - L, the time a bundle's Sink call takes, a moving average;
//   - W = max(L - F, F/8): the rest of a call, the part that does work (the
//     statements, their CPU and lock waits, the transfers).
//
// While one bundle waits for its flush, others can do their work; a flush
// then carries every commit that queued behind it (PostgreSQL's group
// commit). So the limit is 1 + floor(F / W): one bundle, plus as many as fit
// their work into one flush. On a disk that flushes in 70 µs and a bundle
// that works for a millisecond that is one: a second bundle would only split
// the same work into smaller, dearer calls. On a disk whose flush takes a
// millisecond, and a database with CPU to spare, it is two or three. Without
// a FlushMeter the limit stays where Config puts it (InFlightInitial).
//
// The limit rises by at most one per flush reading (every few seconds) and
// falls at once. A failed bundle takes 10 % off the limit until the next
// sample.
//
// It is the one piece of fusion state that several goroutines touch (every
// shard acquires, every flush releases, the meter reports), so a mutex
// guards it; each critical section is a few arithmetic operations.
type inflightLimit struct {
	mu         sync.Mutex
	limit      float64
	min, max   float64
	inUse      int
	lat        time.Duration // L: moving average of the Sink calls
	flushTime  time.Duration // F: the lowest of the recent flush readings; 0: none yet
	readings   [flushReadings]time.Duration
	nreadings  int
	waiters    []chan struct{}
	waiterSeen map[chan struct{}]bool
}

func newInflightLimit(min, max, initial int) *inflightLimit {
	return &inflightLimit{limit: float64(initial), min: float64(min), max: float64(max), waiterSeen: map[chan struct{}]bool{}}
}

// tryAcquire takes a permit if one is free now. When none is, kick is
// remembered and poked (without blocking) at the next release, so a held
// shard wakes as soon as another shard's bundle finishes.
func (v *inflightLimit) tryAcquire(kick chan struct{}) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if float64(v.inUse) < math.Floor(v.limit) {
		v.inUse++
		return true
	}
	if !v.waiterSeen[kick] {
		v.waiterSeen[kick] = true
		v.waiters = append(v.waiters, kick)
	}
	return false
}

// release returns a permit. sampled says whether rtt measured a real bundle;
// failed bundles shrink the limit.
func (v *inflightLimit) release(rtt time.Duration, sampled, failed bool) {
	v.mu.Lock()
	v.inUse--
	v.fold(rtt, sampled, failed)
	waiters := v.waiters
	v.waiters = nil
	clear(v.waiterSeen)
	v.mu.Unlock()
	for _, k := range waiters {
		select {
		case k <- struct{}{}:
		default: // already poked
		}
	}
}

// pass is release for a permit its holder wants to keep for the next
// bundle: rtt is folded in as release does, and the permit stays taken when
// the limit still allows the permits in use, without waking anyone (true).
// Otherwise it is released as by release (false).
func (v *inflightLimit) pass(rtt time.Duration, failed bool) bool {
	v.mu.Lock()
	v.fold(rtt, true, failed)
	keep := float64(v.inUse) <= math.Floor(v.limit)
	v.mu.Unlock()
	if !keep {
		v.release(0, false, false)
	}
	return keep
}

// fold takes one finished bundle into the limit: a failed one shrinks it,
// a sampled call time goes into L. Caller holds mu.
func (v *inflightLimit) fold(rtt time.Duration, sampled, failed bool) {
	if failed {
		v.limit = math.Max(v.min, v.limit*0.9)
	} else if sampled && rtt > 0 {
		v.observe(rtt)
	}
}

// latAlpha weighs one bundle in L's moving average.
const latAlpha = 0.1

// observe folds one bundle's Sink call time into L; the limit may fall at
// once. Caller holds mu.
func (v *inflightLimit) observe(rtt time.Duration) {
	if v.lat == 0 {
		v.lat = rtt
	} else {
		v.lat += time.Duration(latAlpha * float64(rtt-v.lat))
	}
	if t, ok := v.target(); ok && t < v.limit {
		v.limit = t
	}
}

// flushReadings is how many flush readings F is the lowest of. A reading
// taken under load also waits for the commits queued ahead of it (up to a
// whole flush more); the lowest of the last minute's is the disk's.
const flushReadings = 12

// flushed records a flush measurement. The limit rises by at most one per
// reading (a cold start's first commits can flush slowly, and bundles that
// split too early cost CPU), and falls to the target at once. A rise wakes
// the shards waiting for a permit.
func (v *inflightLimit) flushed(f time.Duration) {
	v.mu.Lock()
	grew := false
	if f > 0 {
		v.readings[v.nreadings%flushReadings] = f
		v.nreadings++
		v.flushTime = f
		for _, r := range v.readings[:min(v.nreadings, flushReadings)] {
			v.flushTime = min(v.flushTime, r)
		}
		if t, ok := v.target(); ok {
			grew = t > v.limit
			v.limit = min(t, v.limit+1)
		}
	}
	waiters := v.waiters
	if grew {
		v.waiters = nil
		clear(v.waiterSeen)
	}
	v.mu.Unlock()
	if grew {
		for _, k := range waiters {
			select {
			case k <- struct{}{}:
			default:
			}
		}
	}
}

// target is 1 + floor(F / W) within the bounds; false until F and L are
// both measured. Caller holds mu.
func (v *inflightLimit) target() (float64, bool) {
	if v.flushTime <= 0 || v.lat <= 0 {
		return 0, false
	}
	work := max(v.lat-v.flushTime, v.flushTime/8)
	return math.Min(v.max, math.Max(v.min, 1+math.Floor(float64(v.flushTime)/float64(work)))), true
}

// setMax changes the ceiling (the share of the database this fusion may
// use), bringing the limit under it at once.
func (v *inflightLimit) setMax(max int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.max = math.Max(v.min, float64(max))
	v.limit = math.Min(v.limit, v.max)
}

// snapshot returns the current limit, its ceiling and the permits in use.
func (v *inflightLimit) snapshot() (limit, ceiling, inUse int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return int(v.limit), int(v.max), v.inUse
}

// flushReading returns F and L as the limit last used them.
func (v *inflightLimit) flushReading() (flush, lat time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.flushTime, v.lat
}
