package durability

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/internal/peers"
	"github.com/queenbridge/queenbridge/spool"
	"github.com/rs/zerolog"
)

// Config wires durability to the database, fusion, the spool and the peers.
type Config struct {
	// DB holds the maintenance flag and runs retention (*pgwire.DB).
	// Required.
	DB Store
	// Fusion takes the drain's replays. Required, started by the caller.
	Fusion *fusion.Fusion
	// Spool takes what PostgreSQL could not; nil: such items are answered
	// failed, and there is no drain. Default nil.
	Spool *spool.Spool
	// Peers carries the maintenance broadcast; no NATS: none. Default none.
	Peers peers.Link
	// MaintenancePoll is how often the maintenance flag is re-read from the
	// database (a backstop for the broadcast). Default 5s.
	MaintenancePoll time.Duration
	// DrainInterval is how often the drain looks at the spool when nothing
	// wakes it. Default 1s.
	DrainInterval time.Duration
	// RetentionInterval is how often retention runs; negative disables it.
	// Default 5s.
	RetentionInterval time.Duration
	// Logger for the bridge, spool and pgwire targets. Default: disabled.
	Logger zerolog.Logger
}

// Keeper owns maintenance mode, the spool's intake and drain, and retention.
type Keeper struct {
	cfg         Config
	maintenance atomic.Bool // maintenance mode as last learned
	// popMaintenance: pop maintenance as last learned (pops deliver nothing)
	popMaintenance atomic.Bool
	sub, popSub    *nats.Subscription
	drainKick      chan struct{}
	quit           chan struct{} // closed by Stop: loops end
	bg             sync.WaitGroup
	stop           sync.Once

	replayed         atomic.Uint64
	drainErrors      atomic.Uint64
	retainedSegments atomic.Uint64
}

// New validates cfg and applies defaults.
func New(cfg Config) (*Keeper, error) {
	if cfg.DB == nil || cfg.Fusion == nil {
		return nil, errors.New("durability: Config.DB and Config.Fusion are required")
	}
	if cfg.MaintenancePoll == 0 {
		cfg.MaintenancePoll = 5 * time.Second
	}
	if cfg.DrainInterval == 0 {
		cfg.DrainInterval = time.Second
	}
	if cfg.RetentionInterval == 0 {
		cfg.RetentionInterval = 5 * time.Second
	}
	return &Keeper{cfg: cfg, drainKick: make(chan struct{}, 1), quit: make(chan struct{})}, nil
}

// Start reads the maintenance flag, listens for its broadcasts, and starts
// the poll, the drain (with a spool; records left from an earlier run are
// looked at at once) and retention.
func (k *Keeper) Start(ctx context.Context) error {
	if err := k.startMaintenance(ctx); err != nil {
		return err
	}
	if k.cfg.Spool != nil {
		k.bg.Add(1)
		go k.drainLoop()
		k.kickDrain()
	}
	if k.cfg.RetentionInterval > 0 {
		k.bg.Add(1)
		go k.tickLoop(k.cfg.RetentionInterval, k.retentionStep)
	}
	return nil
}

// Stop ends the loops and the subscription and waits for them: a drain in
// progress finishes its chunk. Idempotent.
func (k *Keeper) Stop(context.Context) error {
	k.stop.Do(func() {
		close(k.quit)
		peers.Unsubscribe(k.sub)
		peers.Unsubscribe(k.popSub)
		k.bg.Wait()
	})
	return nil
}

// tickLoop calls fn every period until Stop; the caller has counted it in
// k.bg.
func (k *Keeper) tickLoop(period time.Duration, fn func()) {
	defer k.bg.Done()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-k.quit:
			return
		case <-t.C:
		}
		fn()
	}
}

// Stats are counters for the metrics.
type Stats struct {
	Maintenance    bool
	PopMaintenance bool
	SpoolRecords   int64 // waiting in the spool
	SpoolBytes     int64 // of the spool files
	SpoolSkipped   int64 // damaged spool bytes passed over at start
	// SpoolHealthy: there is a spool and it has room, so what PostgreSQL
	// cannot take can be buffered.
	SpoolHealthy     bool
	Replayed         uint64
	DrainErrors      uint64
	RetainedSegments uint64
}

// Stats returns a snapshot.
func (k *Keeper) Stats() Stats {
	s := Stats{Maintenance: k.maintenance.Load(), PopMaintenance: k.popMaintenance.Load(), Replayed: k.replayed.Load(),
		DrainErrors: k.drainErrors.Load(), RetainedSegments: k.retainedSegments.Load()}
	if k.cfg.Spool != nil {
		st := k.cfg.Spool.Stats()
		s.SpoolRecords, s.SpoolBytes, s.SpoolSkipped = st.Records, st.Bytes, st.SkippedBytes
		s.SpoolHealthy = st.Bytes < k.cfg.Spool.MaxBytes()
	}
	return s
}
