package fusion

import (
	"github.com/queenbridge/queenbridge/segment"
	"sync/atomic"
	"time"

	"github.com/queenbridge/queenbridge/internal/every"
	"github.com/rs/zerolog"
)

// counters are updated by flush goroutines and read by Stats and the summary
// logger: atomics, no lock.
type counters struct {
	bundles      atomic.Uint64
	bundleErrors atomic.Uint64
	segments     atomic.Uint64
	items        atomic.Uint64
	localDups    atomic.Uint64
	requeued     atomic.Uint64
	fills        atomic.Uint64
	busy         atomic.Int64 // nanoseconds spent in Sink calls
}

func (c *counters) bundleDone(segments, items int, took time.Duration, err error) {
	c.bundles.Add(1)
	c.busy.Add(int64(took))
	c.segments.Add(uint64(segments))
	c.items.Add(uint64(items))
	if err != nil {
		c.bundleErrors.Add(1)
	}
}

// Stats is a snapshot of fusion's counters (monotonic since Start) and gauges.
type Stats struct {
	Bundles         uint64        // Sink calls (commits, when they succeed)
	BundleErrors    uint64        // Sink calls that failed
	Segments        uint64        // segments sent
	ItemsFired      uint64        // frames sent (leaders)
	LocalDuplicates uint64        // frames answered from this bridge's recent hashes
	Requeued        uint64        // frames sent again after a duplicate segment
	Fills           uint64        // reads of offsets written by another writer, counted once applied
	Busy            time.Duration // time spent in Sink calls, summed over calls
	InFlightLimit   int           // bundles that may be in flight now (inflight.go)
	InFlightCeiling int           // its ceiling: InFlightMax, or this bridge's share of it (SetShare)
	PermitsInUse    int           // bundles in flight, all shards
	PendingBytes    int64         // payload bytes accepted, not yet answered
	FlushTime       time.Duration // the database's commit flush, last measured (0: no FlushMeter)
	BundleLatency   time.Duration // moving average of a Sink call

	// Deprecated: InFlightLimit and InFlightCeiling under their old names,
	// the same values; to be removed.
	VegasLimit, VegasCeiling int
}

// Stats returns a snapshot.
func (f *Fusion) Stats() Stats {
	limit, ceiling, inUse := f.limit.snapshot()
	flush, lat := f.limit.flushReading()
	return Stats{
		Bundles:         f.stats.bundles.Load(),
		BundleErrors:    f.stats.bundleErrors.Load(),
		Segments:        f.stats.segments.Load(),
		ItemsFired:      f.stats.items.Load(),
		LocalDuplicates: f.stats.localDups.Load(),
		Requeued:        f.stats.requeued.Load(),
		Fills:           f.stats.fills.Load(),
		Busy:            time.Duration(f.stats.busy.Load()),
		InFlightLimit:   limit,
		InFlightCeiling: ceiling,
		VegasLimit:      limit,
		VegasCeiling:    ceiling,
		PermitsInUse:    inUse,
		PendingBytes:    f.pendingBytes.Load(),
		FlushTime:       flush,
		BundleLatency:   lat,
	}
}

// summaryLoop writes the `fusion` bundle summary every SummaryEvery while
// there is traffic: segments far above commits is fusion coalescing;
// bundle_ms is the mean Sink call, in_flight the mean number of Sink calls
// under way (their time over the period's).
func (f *Fusion) summaryLoop() {
	defer f.bgWG.Done()
	t := time.NewTicker(f.cfg.SummaryEvery)
	defer t.Stop()
	var last Stats
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-t.C:
		}
		now := f.Stats()
		f.period.Add(1)
		parts := f.periodParts.Swap(0)
		commits := now.Bundles - now.BundleErrors - (last.Bundles - last.BundleErrors)
		if now.Bundles != last.Bundles {
			segs := now.Segments - last.Segments
			perCommit := 0.0
			if commits > 0 {
				perCommit = float64(segs) / float64(commits)
			}
			busy := now.Busy - last.Busy
			f.cfg.Logger.Info().Str("target", "fusion").
				Uint64("commits", commits).Uint64("segments", segs).
				Float64("segments_per_commit", perCommit).
				Float64("bundle_ms", busy.Seconds()*1e3/float64(now.Bundles-last.Bundles)).
				Float64("in_flight", busy.Seconds()/f.cfg.SummaryEvery.Seconds()).
				Uint64("items", now.ItemsFired-last.ItemsFired).
				Int64("partitions", parts).
				Uint64("errors", now.BundleErrors-last.BundleErrors).
				Int("in_flight_limit", now.InFlightLimit).
				Float64("flush_ms", now.FlushTime.Seconds()*1e3).
				Func(f.summaryFields).Msg("bundle summary")
		}
		last = now
	}
}

// SetSummaryFields adds fn's fields to every bundle summary line (the
// bridge adds what it owns). Safe to call while fusion runs.
func (f *Fusion) SetSummaryFields(fn func(*zerolog.Event)) { f.extraFields.Store(&fn) }

// SetOnCommitted sets a function called with every bundle the Sink
// committed (its writes and results, Queued or not), on the flush
// goroutine before any of its pushes is answered; keep it cheap. The
// consume room's hot tail is fed so.
func (f *Fusion) SetOnCommitted(fn func([]segment.Write, []segment.Result)) { f.committed.Store(&fn) }

func (f *Fusion) summaryFields(e *zerolog.Event) {
	if fn := f.extraFields.Load(); fn != nil {
		(*fn)(e)
	}
}

// Hot-path error lines are rate-limited: one per second per kind.
var (
	bundleErrLog = every.New(time.Second)
	idErrLog     = every.New(time.Second)
	fillErrLog   = every.New(time.Second)
)

func (f *Fusion) logBundleError(err error, segments, items int) {
	if bundleErrLog.Allow() {
		f.cfg.Logger.Warn().Str("target", "fusion").Err(err).Int("segments", segments).Int("items", items).Msg("bundle failed; its frames are answered error")
	}
}

func (f *Fusion) logFillError(err error, pid int64) {
	if fillErrLog.Allow() {
		f.cfg.Logger.Warn().Str("target", "fusion").Err(err).Int64("partition_id", pid).Msg("reading another writer's hashes failed; the probe keeps covering them")
	}
}

func (f *Fusion) logIDError(err error, pid, off int64) {
	if idErrLog.Allow() {
		f.cfg.Logger.Warn().Str("target", "fusion").Err(err).Int64("partition_id", pid).Int64("offset", off).Msg("duplicate's original id not resolved; answering the zero id")
	}
}
