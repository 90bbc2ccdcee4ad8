package fusion

import (
	"math"
	"sync"
	"time"
)

// vegas is the adaptive concurrency limit of the push lane, shared by every
// shard: a TCP-Vegas style estimator that shrinks the limit when bundle
// latency shows queueing (in PostgreSQL, behind locks or the WAL flush), and
// grows it while latency stays near the minimum seen — but only while
// bundles leave full (Config.BundleMax segments). A bundle with room left
// carried everything that was waiting, so another one in flight would only
// split the same work into smaller, dearer calls: such bundles shrink the
// limit towards its floor instead. Measured with 64 submitters over 1,000
// partitions on two cores: a limit of 3 gave 12 segments per commit and
// 13 k items/s, a limit of 1 gave 27 and 19 k, at half the PostgreSQL CPU
// per item. Per-call latency hardly moves with the limit there (the cores
// are shared by everything), so latency alone kept the limit at 3.
//
// It is the one piece of fusion state that several goroutines touch (every
// shard acquires, every flush releases), so a mutex guards it; each critical
// section is a few arithmetic operations.
type vegas struct {
	mu         sync.Mutex
	limit      float64
	min, max   float64
	inflight   int
	minRTT     time.Duration
	samples    int       // since minRTT was last reset
	resetAt    time.Time // when minRTT was last reset
	waiters    []chan struct{}
	waiterSeen map[chan struct{}]bool
}

func newVegas(min, max, initial int) *vegas {
	return &vegas{limit: float64(initial), min: float64(min), max: float64(max), waiterSeen: map[chan struct{}]bool{}, resetAt: time.Now()}
}

// tryAcquire takes a permit if one is free now. When none is, kick is
// remembered and poked (without blocking) at the next release, so a held
// shard wakes as soon as another shard's bundle finishes.
func (v *vegas) tryAcquire(kick chan struct{}) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if float64(v.inflight) < math.Floor(v.limit) {
		v.inflight++
		return true
	}
	if !v.waiterSeen[kick] {
		v.waiterSeen[kick] = true
		v.waiters = append(v.waiters, kick)
	}
	return false
}

// release returns a permit. sampled says whether rtt measured a real bundle,
// full whether that bundle left with no room; failed bundles shrink the
// limit.
func (v *vegas) release(rtt time.Duration, sampled, full, failed bool) {
	v.mu.Lock()
	v.inflight--
	if failed {
		v.limit = math.Max(v.min, v.limit*0.9)
	} else if sampled && rtt > 0 {
		v.observe(rtt, full)
	}
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

// observe applies one latency sample of a bundle that was full or not.
// Caller holds mu.
func (v *vegas) observe(rtt time.Duration, full bool) {
	v.samples++
	// The base latency moves (bigger bundles, a warmer cache): re-learn the
	// minimum every so often rather than trusting one lucky sample forever.
	if v.minRTT == 0 || rtt < v.minRTT || v.samples > 2000 || time.Since(v.resetAt) > 10*time.Second {
		if v.minRTT == 0 || rtt < v.minRTT {
			v.minRTT = rtt
		} else {
			v.minRTT, v.samples, v.resetAt = rtt, 0, time.Now()
		}
	}
	queue := v.limit * (1 - float64(v.minRTT)/float64(rtt))
	lg := math.Max(1, math.Log10(v.limit))
	alpha, beta := lg, 2*lg
	switch {
	case queue > beta || !full:
		v.limit--
	case queue < alpha && float64(v.inflight+1) >= v.limit/2:
		// Full bundles, latency near the minimum, and the limit actually in
		// use: there is room for one more concurrent bundle.
		v.limit++
	}
	v.limit = math.Min(v.max, math.Max(v.min, v.limit))
}

// setMax changes the ceiling (the share of the database this fusion may
// use), bringing the limit under it at once.
func (v *vegas) setMax(max int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.max = math.Max(v.min, float64(max))
	v.limit = math.Min(v.limit, v.max)
}

// snapshot returns the current limit, its ceiling and the permits in use.
func (v *vegas) snapshot() (limit, ceiling, inflight int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return int(v.limit), int(v.max), v.inflight
}
