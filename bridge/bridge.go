package bridge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// Bridge is the front door: the NATS micro service and the HTTP shim.
type Bridge struct {
	cfg     Config
	metrics *Metrics
	queues  *queueCache
	sealer  *sealer

	// gate orders NATS handlers against Stop: a handler holds it shared
	// while it checks `stopping` and enqueues into work; Stop takes it
	// exclusively to set `stopping`, after which nothing enters work and it
	// can be closed.
	gate     sync.RWMutex
	stopping atomic.Bool
	work     chan func()
	workWG   sync.WaitGroup
	calls    sync.WaitGroup // NATS requests between receipt and answer

	svc     micro.Service
	httpSrv *http.Server
	httpLn  net.Listener

	id          string      // this bridge, in broadcasts
	maintenance atomic.Bool // maintenance mode as last learned
	maintSub    *nats.Subscription
	drainKick   chan struct{}
	replayed    atomic.Uint64
	drainErrors atomic.Uint64
	quit        chan struct{} // closed by Stop: background loops end
	bg          sync.WaitGroup

	parked            *parked
	hot               *keySet // partitions whose parked reads wake on the next tick
	toPeers           *keySet // partitions to announce to peers
	availSub          *nats.Subscription
	queueSub          *nats.Subscription
	fetchSlots        chan struct{}
	announced         atomic.Uint64
	peerAnnouncements atomic.Uint64
	retainedSegments  atomic.Uint64
	queueSettings     atomic.Uint64 // queue settings taken from peers

	stopOnce sync.Once
	stopErr  error
}

// New validates cfg. Metrics may be nil (a new set is registered).
func New(cfg Config, m *Metrics) (*Bridge, error) {
	if err := cfg.applyDefaults(); err != nil {
		return nil, err
	}
	s, err := newSealer(cfg.EncryptionKey)
	if err != nil {
		return nil, err
	}
	if m == nil {
		m = NewMetrics(cfg.Registry)
	}
	b := &Bridge{cfg: cfg, metrics: m, queues: newQueueCache(cfg.DB, cfg.QueueCacheTTL), sealer: s,
		id: uuid.NewString(), drainKick: make(chan struct{}, 1), quit: make(chan struct{}),
		parked: newParked(), hot: newKeySet(), toPeers: newKeySet(), fetchSlots: make(chan struct{}, cfg.MaxParkedFetches)}
	m.registerFusion(cfg.Fusion)
	m.registerBridge(b)
	return b, nil
}

// ID names this bridge in broadcasts.
func (b *Bridge) ID() string { return b.id }

// Start registers the NATS service and opens the HTTP listener.
func (b *Bridge) Start(ctx context.Context) error {
	if err := b.startMaintenance(ctx); err != nil {
		return err
	}
	if b.cfg.Spool != nil {
		b.bg.Add(1)
		go b.drainLoop()
		b.kickDrain() // records left from an earlier run
	}
	if !b.cfg.DisableHotlist {
		b.bg.Add(1)
		go b.hotlistLoop()
	}
	if b.cfg.RetentionInterval > 0 {
		b.bg.Add(1)
		go b.tickLoop(b.cfg.RetentionInterval, b.retentionStep)
	}
	if b.cfg.NATS != nil {
		sub, err := b.cfg.NATS.Subscribe(b.availableSubject(), b.onAvailable)
		if err != nil {
			return err
		}
		b.availSub = sub
		if b.queueSub, err = b.cfg.NATS.Subscribe(b.queueChangedSubject(), b.onQueueChanged); err != nil {
			return err
		}
		b.bg.Add(1)
		go b.publishLoop()
		b.work = make(chan func(), 4*b.cfg.Workers)
		for i := 0; i < b.cfg.Workers; i++ {
			b.workWG.Add(1)
			go func() {
				defer b.workWG.Done()
				for fn := range b.work {
					fn()
				}
			}()
		}
		if err := b.startNATS(); err != nil {
			return err
		}
	}
	if b.cfg.HTTPAddr != "" {
		ln, err := net.Listen("tcp", b.cfg.HTTPAddr)
		if err != nil {
			return fmt.Errorf("bridge: http listen %s: %w", b.cfg.HTTPAddr, err)
		}
		b.httpLn = ln
		// Reading a request (a body of up to MaxBodyBytes) and idling are
		// bounded; writing is not, because a parked read holds its answer
		// for up to its waitMs.
		b.httpSrv = &http.Server{Handler: b.httpHandler(), ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute}
		go func() {
			if err := b.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				b.cfg.Logger.Error().Str("target", "bridge").Err(err).Msg("http server stopped")
			}
		}()
	}
	return nil
}

// HTTPAddr is the address the HTTP shim listens on ("" without one).
func (b *Bridge) HTTPAddr() string {
	if b.httpLn == nil {
		return ""
	}
	return b.httpLn.Addr().String()
}

// Stop closes intake (new requests are answered 503), then waits, within
// ctx, until every accepted request has been answered. Fusion must still be
// running while it waits. Idempotent.
func (b *Bridge) Stop(ctx context.Context) error {
	b.stopOnce.Do(func() {
		b.gate.Lock()
		b.stopping.Store(true)
		b.gate.Unlock()
		var errs []error
		if b.svc != nil {
			if err := b.svc.Stop(); err != nil {
				errs = append(errs, err)
			}
		}
		if b.work != nil {
			close(b.work)
			b.workWG.Wait()
		}
		if b.httpSrv != nil {
			if err := b.httpSrv.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("bridge: http shutdown: %w", err))
			}
		}
		answered := make(chan struct{})
		go func() { b.calls.Wait(); close(answered) }()
		select {
		case <-answered:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("bridge: requests still unanswered: %w", ctx.Err()))
		}
		close(b.quit)
		for _, sub := range []*nats.Subscription{b.maintSub, b.availSub, b.queueSub} {
			if sub != nil {
				_ = sub.Unsubscribe()
			}
		}
		b.bg.Wait() // a drain in progress finishes its chunk: fusion is still running
		b.stopErr = errors.Join(errs...)
	})
	return b.stopErr
}
