package console

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/queenbridge/queenbridge/internal/route"
	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// Figures are this bridge's counters and states at one moment, as the
// front door reads them from the rooms' Stats. The counters only grow.
type Figures struct {
	Pushed   uint64 // items written by this bridge's fusion (fusion ItemsFired)
	Consumed uint64 // messages delivered by pops here (consume Delivered)
	Commits  uint64 // bundle calls that committed (fusion Bundles less BundleErrors)
	Segments uint64 // segments sent in them (fusion Segments)

	BundlesInFlight, InFlightLimit int           // fusion PermitsInUse, InFlightLimit
	Flush, BundleLatency           time.Duration // fusion FlushTime, BundleLatency

	Maintenance, PopMaintenance bool
	SpoolRecords, SpoolBytes    int64
	SpoolHealthy                bool

	// Members are the live bridges, sorted, and Owned how many buckets
	// each owns (ownership Shares): every bucket has one owner.
	Members []string
	Owned   []int

	// Publish are the publish relay's slots (publish Stats).
	Publish []OverviewSlot
}

// Config wires the console.
type Config struct {
	// Bridge is this bridge's id. Required.
	Bridge string
	// Figures reads this bridge's figures; it must not block. Required.
	Figures func() Figures
	// Interval between samples; negative: no sampler goroutine (the
	// owner calls Sample). Default 2s.
	Interval time.Duration
	// Keep is how many intervals the history keeps. Default 300 (ten
	// minutes at 2 s).
	Keep int
	// Now is the clock samples and answers are stamped with. Default
	// time.Now.
	Now func() time.Time
}

// Console owns the sampler and the history.
type Console struct {
	cfg Config

	// mu guards prev and hist. The sampler's goroutine (or a test's call of
	// Sample) writes them and request goroutines copy the history out:
	// a mutex held for one sample's arithmetic or one copy of at most Keep
	// points is simpler than handing the ring to the goroutine over
	// channels, and a request never waits on a tick.
	mu   sync.Mutex
	prev sample // the last sample taken (zero time: none yet)
	hist ring

	quit     chan struct{}
	done     chan struct{}
	started  bool
	stopOnce sync.Once
}

// New validates cfg and applies its defaults.
func New(cfg Config) (*Console, error) {
	if cfg.Bridge == "" || cfg.Figures == nil {
		return nil, errors.New("console: Config.Bridge and Config.Figures are required")
	}
	if cfg.Interval == 0 {
		cfg.Interval = 2 * time.Second
	}
	if cfg.Keep == 0 {
		cfg.Keep = 300
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Keep < 1 {
		return nil, errors.New("console: Config.Keep must be at least 1")
	}
	return &Console{cfg: cfg, hist: ring{buf: make([]OverviewPoint, cfg.Keep)}, quit: make(chan struct{}), done: make(chan struct{})}, nil
}

// Start takes the first sample and starts the sampler.
// A second Start is an error: one sampler per console.
func (c *Console) Start(context.Context) error {
	if c.started {
		return errors.New("console: started twice")
	}
	c.Sample()
	if c.cfg.Interval > 0 {
		c.started = true
		go c.run()
	}
	return nil
}

func (c *Console) run() {
	defer close(c.done)
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-t.C:
			c.Sample()
		}
	}
}

// Stop stops the sampler and waits for it. Idempotent.
func (c *Console) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() { close(c.quit) })
	if !c.started {
		return nil
	}
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Sample reads the figures now and adds the interval since the previous
// sample to the history. The sampler calls it every Interval; a test calls
// it instead of waiting for ticks.
func (c *Console) Sample() {
	s := sampleOf(c.cfg.Figures(), c.cfg.Now())
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.prev.at.IsZero() {
		c.hist.add(pointBetween(c.prev, s))
	}
	c.prev = s
}

// Routes lists the console's routes (GET /api/v1/bridge/overview).
func (c *Console) Routes() []route.Route {
	return []route.Route{{Method: "GET", Pattern: "/api/v1/bridge/overview", Serve: c.serveOverview}}
}

// serveOverview answers this bridge's figures, the same for every tenant:
// they are the bridge's, every tenant's together, and name no queue or
// tenant (tenant tokens read the same totals in the metrics).
func (c *Console) serveOverview(context.Context, tenancy.TenantID, route.Request) (int, []byte) {
	return 200, EncodeBridgeOverview(c.Overview())
}

// Overview is the answer: the figures now and the history, oldest first.
func (c *Console) Overview() BridgeOverview {
	f := c.cfg.Figures()
	o := BridgeOverview{Bridge: c.cfg.Bridge, Time: c.cfg.Now(), Maintenance: f.Maintenance, PopMaintenance: f.PopMaintenance,
		Spool:           OverviewSpool{Records: f.SpoolRecords, Bytes: f.SpoolBytes, Healthy: f.SpoolHealthy},
		BundlesInFlight: f.BundlesInFlight, InFlightLimit: f.InFlightLimit,
		FlushMs: Millis(f.Flush), BundleLatencyMs: Millis(f.BundleLatency),
		Totals:  OverviewTotals{Pushed: f.Pushed, Consumed: f.Consumed, Commits: f.Commits, Segments: f.Segments},
		Bridges: make([]OverviewBridge, len(f.Members)), Publish: f.Publish}
	for i, id := range f.Members {
		o.Bridges[i] = OverviewBridge{ID: id, Self: id == c.cfg.Bridge}
		if i < len(f.Owned) {
			o.Bridges[i].Buckets = f.Owned[i]
			o.Buckets += f.Owned[i]
		}
	}
	c.mu.Lock()
	o.History = c.hist.points()
	c.mu.Unlock()
	return o
}
