package publish

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/rs/zerolog"
)

// Pusher is the push path the relay feeds: bridge.Bridge's PushItems. It
// returns when every item has its verdict: the push's HTTP-like status
// and one result per item. The push path may still read items after it
// returned, so the caller must not reuse the slice.
type Pusher interface {
	PushItems(ctx context.Context, transport string, tenant tenancy.TenantID, items []jsonapi.Item) (int, []jsonapi.Result)
}

// Positions stores each slot's relayed position in the log's database
// (pgwire.DB), and reads the marks the push path stores with the segments
// (queen.publish_marks: per partition, the place of the last message of
// the slot stored there).
type Positions interface {
	RelayPosition(ctx context.Context, key string) (uint64, error)
	SaveRelayPosition(ctx context.Context, key string, lsn uint64) error
	RelayMarks(ctx context.Context, key string) ([]pgwire.RelayMark, error)
}

// Transport names the relay in the push metrics.
const Transport = "publish"

// Source is one watched database.
type Source struct {
	// DSN reaches the database; its role needs the REPLICATION attribute.
	// Required.
	DSN string
	// Slot is the replication slot's name. Default: pgwire.SlotName of the
	// DSN's database.
	Slot string
}

// Config wires the relay.
type Config struct {
	// Sources are the watched databases. Empty: the relay does nothing.
	// Default none.
	Sources []Source
	// Push is the push path. Required with sources.
	Push Pusher
	// Positions stores the relayed positions. Required with sources.
	Positions Positions
	// Retry is how often a bridge that does not hold a slot (another
	// reads it, or the database was unreachable) tries to take it.
	// Default 1s.
	Retry time.Duration
	// MaxBatch caps the messages of one push. Default 256.
	MaxBatch int
	// MaxLagBytes and MaxLag bound a slot's lag: beyond either the slot is
	// reported behind (Behind, /health, the console). Defaults 1 GiB, 60s.
	MaxLagBytes int64
	MaxLag      time.Duration
	// Logger for the publish target. Default: disabled.
	Logger zerolog.Logger
}

// Relay reads each source's slot and pushes its committed messages.
type Relay struct {
	cfg     Config
	sources []*source
	cancel  context.CancelFunc
	wg      sync.WaitGroup // one per source goroutine
	stop    sync.Once
}

// New validates cfg.
func New(cfg Config) (*Relay, error) {
	if cfg.Retry == 0 {
		cfg.Retry = time.Second
	}
	if cfg.MaxBatch == 0 {
		cfg.MaxBatch = 256
	}
	if cfg.MaxLagBytes == 0 {
		cfg.MaxLagBytes = 1 << 30
	}
	if cfg.MaxLag == 0 {
		cfg.MaxLag = time.Minute
	}
	if cfg.Retry < 0 || cfg.MaxBatch < 0 || cfg.MaxLagBytes < 0 || cfg.MaxLag < 0 {
		return nil, errors.New("publish: Retry, MaxBatch, MaxLagBytes and MaxLag must be positive")
	}
	if len(cfg.Sources) > 0 && (cfg.Push == nil || cfg.Positions == nil) {
		return nil, errors.New("publish: Config.Push and Config.Positions are required with sources")
	}
	r := &Relay{cfg: cfg}
	slots := map[string]bool{}
	for _, s := range cfg.Sources {
		db, err := pgwire.DatabaseOf(s.DSN)
		if err != nil {
			return nil, fmt.Errorf("publish: source: %w", err)
		}
		if s.Slot == "" {
			s.Slot = pgwire.SlotName(db)
		}
		if slots[s.Slot] {
			return nil, fmt.Errorf("publish: two sources use slot %s; name the databases apart", s.Slot)
		}
		slots[s.Slot] = true
		r.sources = append(r.sources, &source{r: r, dsn: s.DSN, slot: s.Slot, database: db,
			log: cfg.Logger.With().Str("database", db).Str("slot", s.Slot).Logger()})
	}
	return r, nil
}

// Start starts one goroutine per source, which it owns until Stop.
func (r *Relay) Start(context.Context) error {
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	for _, s := range r.sources {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			s.run(ctx)
		}()
	}
	return nil
}

// Stop ends every source's session: the push in progress is answered, its
// position confirmed when it succeeded, and the slot left for the next
// reader. It waits, within ctx, for the goroutines. Idempotent.
func (r *Relay) Stop(ctx context.Context) error {
	var err error
	r.stop.Do(func() {
		if r.cancel == nil {
			return
		}
		r.cancel()
		done := make(chan struct{})
		go func() { r.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			err = fmt.Errorf("publish: stop: %w", ctx.Err())
		}
	})
	return err
}

// sleep waits d or until ctx ends; false when it ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
