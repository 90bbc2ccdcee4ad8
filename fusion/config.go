package fusion

import (
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"
)

// Config tunes fusion. The zero value of every field but Sink means its default.
type Config struct {
	// Sink commits bundles. Required.
	Sink Sink
	// Shards partitions the partition space (QUEEN_FUSION_SHARDS). Default 8.
	Shards int
	// BundleMax caps the segments of one bundle (QUEEN_BUNDLE_MAX). Default 256.
	BundleMax int
	// BundleMaxBytes caps the bytes of one bundle (QUEEN_BUNDLE_MAX_BYTES),
	// counted before compression: each frame's payload, transactionId,
	// traceId, NATS subject and header plus FrameOverhead, and
	// SegmentOverhead per segment. A
	// partition whose pending frames exceed it is written over several
	// flushes, in order, one at a time; a single frame larger than it is
	// written alone, in a bundle of its own. Default 8 MiB.
	BundleMaxBytes int64
	// HoldTick is the backstop tick that retries held partitions
	// (QUEEN_FUSION_HOLD_MS). Default 15ms.
	HoldTick time.Duration
	// ShardQueue is the capacity of each shard's submission queue; Submit
	// blocks (until its context ends) when it is full. Default 4096.
	ShardQueue int
	// MaxPendingBytes caps payload (and NATS header) bytes accepted but not
	// yet answered; past it Submit fails with ErrOverloaded. Default 512 MiB.
	MaxPendingBytes int64
	// InFlightMin, InFlightMax and InFlightInitial bound how many bundles
	// may be in flight at once (QUEEN_BUNDLES_IN_FLIGHT_MIN, _MAX). With a
	// FlushMeter the number is 1 + floor(F / W) within [InFlightMin,
	// InFlightMax], F the database's commit flush and W the working part of
	// a bundle call (inflight.go); without one it stays at InFlightInitial.
	// InFlightMax should be at most the database pool size. Defaults 1, 16, 1.
	InFlightMin, InFlightMax, InFlightInitial int
	// Deprecated: the old names of InFlightMin, InFlightMax and
	// InFlightInitial, read only when those are zero; to be removed.
	VegasMin, VegasMax, VegasInitial int
	// RecentHashBytes is the memory all partitions' recent-hash sets share:
	// the hashes this bridge wrote inside each queue's window, which spare
	// the probe and answer repeats locally (32 bytes per frame held). A
	// partition that cannot hold its whole window forgets its oldest
	// entries, and only their range is probed. Default 512 MiB: a full
	// 60 s window of ≈ 250 k frames/s.
	RecentHashBytes int64
	// FlushProbeEvery is how often the Sink's FlushMeter, when it has one,
	// measures the database's commit flush, from which the number of
	// bundles in flight follows (docs/fusion.md). Default 5s.
	FlushProbeEvery time.Duration
	// FlushTimeout bounds one Sink call. Default 30s.
	FlushTimeout time.Duration
	// SummaryEvery is the period of the `fusion` bundle summary log line,
	// written only when there was traffic. Default 10s.
	SummaryEvery time.Duration
	// Logger receives the summary and error lines. Default: disabled.
	Logger zerolog.Logger
	// OnBundle, when set, is called after every Sink call (from the flush
	// goroutine; keep it cheap). Default nil.
	OnBundle func(BundleInfo)
}

// BundleInfo describes one finished Sink call.
type BundleInfo struct {
	Segments int
	Items    int // frames written (leaders), excluding layer-2 followers
	Duration time.Duration
	Err      error
}

func (c *Config) applyDefaults() error {
	if c.Sink == nil {
		return errors.New("fusion: Config.Sink is required")
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Shards, 8)
	def(&c.BundleMax, 256)
	def(&c.ShardQueue, 4096)
	def(&c.InFlightMin, c.VegasMin)
	def(&c.InFlightMax, c.VegasMax)
	def(&c.InFlightInitial, c.VegasInitial)
	def(&c.InFlightMin, 1)
	def(&c.InFlightMax, 16)
	def(&c.InFlightInitial, 1)
	if c.HoldTick == 0 {
		c.HoldTick = 15 * time.Millisecond
	}
	if c.BundleMaxBytes == 0 {
		c.BundleMaxBytes = 8 << 20
	}
	if c.RecentHashBytes == 0 {
		c.RecentHashBytes = 512 << 20
	}
	if c.MaxPendingBytes == 0 {
		c.MaxPendingBytes = 512 << 20
	}
	if c.FlushTimeout == 0 {
		c.FlushTimeout = 30 * time.Second
	}
	if c.FlushProbeEvery == 0 {
		c.FlushProbeEvery = 5 * time.Second
	}
	if c.SummaryEvery == 0 {
		c.SummaryEvery = 10 * time.Second
	}
	for name, v := range map[string]int{"Shards": c.Shards, "BundleMax": c.BundleMax,
		"ShardQueue": c.ShardQueue, "InFlightMin": c.InFlightMin} {
		if v < 1 {
			return fmt.Errorf("fusion: Config.%s must be at least 1, got %d", name, v)
		}
	}
	if c.InFlightMax < c.InFlightMin {
		return fmt.Errorf("fusion: InFlightMax %d is below InFlightMin %d", c.InFlightMax, c.InFlightMin)
	}
	if c.InFlightInitial < c.InFlightMin {
		c.InFlightInitial = c.InFlightMin
	}
	if c.InFlightInitial > c.InFlightMax {
		c.InFlightInitial = c.InFlightMax
	}
	if c.HoldTick < 0 || c.FlushTimeout < 0 || c.FlushProbeEvery < 0 || c.MaxPendingBytes < 0 || c.RecentHashBytes < 0 || c.BundleMaxBytes < 0 {
		return errors.New("fusion: durations and byte caps must not be negative")
	}
	return nil
}
