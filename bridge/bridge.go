package bridge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/micro"
	"github.com/queenbridge/queenbridge/admin"
	"github.com/queenbridge/queenbridge/auth"
	"github.com/queenbridge/queenbridge/console"
	"github.com/queenbridge/queenbridge/consume"
	"github.com/queenbridge/queenbridge/cursors"
	"github.com/queenbridge/queenbridge/durability"
	"github.com/queenbridge/queenbridge/internal/budget"
	"github.com/queenbridge/queenbridge/internal/gate"
	"github.com/queenbridge/queenbridge/internal/httpserve"
	"github.com/queenbridge/queenbridge/internal/peers"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jetstream"
	"github.com/queenbridge/queenbridge/metrics"
	"github.com/queenbridge/queenbridge/ownership"
	"github.com/queenbridge/queenbridge/publish"
	"github.com/queenbridge/queenbridge/push"
	"github.com/queenbridge/queenbridge/queues"
	"github.com/queenbridge/queenbridge/readside"
	"github.com/queenbridge/queenbridge/segment"
)

// Bridge is the front door: the NATS micro service and the HTTP API. It
// composes the rooms behind it (docs/architecture.md) and holds only the
// front door's own state.
type Bridge struct {
	cfg      Config
	metrics  *metrics.Metrics
	queues   *queues.Settings
	reads    *readside.Reads
	pusher   *push.Pusher      // the push call
	consumer *consume.Consumer // Queen's consumer API
	admin    *admin.Admin      // Queen's admin routes
	console  *console.Console  // the web console's figures of this bridge
	messages *readside.Messages
	keeper   *durability.Keeper
	router   *ownership.Router // who writes which partition; forwarding
	js       *jetstream.Intake // JetStream publishes on the streams' subjects
	jsc      *jsConsumers      // JetStream pull consumers; nil without streams or a leafnode listener
	relay    *publish.Relay    // queen.publish messages from the watched databases
	tokens   *auth.Tokens      // HTTP bearer tokens; none: HTTP is open
	accounts *auth.Accounts    // NATS account -> tenant; none: single-account mode

	// gate admits requests until Stop and counts them until answered;
	// its workers decode and submit NATS requests.
	gate *gate.Gate

	svc        micro.Service
	httpSrv    *httpserve.Server
	metricsSrv *httpserve.Server // the metrics-only listener (Config.MetricsAddr)
	parkSlots  chan struct{}     // requests parked at once: reads and pops, NATS and HTTP
	budget     *budget.Bytes     // request bytes in memory
	// natsTooLarge counts NATS answers refused for passing max_payload
	// (natsfit.go); an atomic: every answering goroutine adds to it.
	natsTooLarge atomic.Uint64

	id         string // this bridge, in broadcasts
	ownSubject string // this bridge's own push subject (ownership.PushSubject)

	stopOnce sync.Once
	stopErr  error
}

// New validates cfg and builds the rooms from it. Metrics may be nil (a new
// set is registered).
func New(cfg Config, m *metrics.Metrics) (*Bridge, error) {
	if err := cfg.applyDefaults(); err != nil {
		return nil, err
	}
	b := &Bridge{cfg: cfg, id: uuid.NewString(), gate: gate.New(), parkSlots: make(chan struct{}, cfg.MaxParked),
		budget: budget.New(cfg.MaxInflightBytes)}
	b.ownSubject = ownership.PushSubject(cfg.Prefix, b.id)
	link := peers.Link{NATS: cfg.NATS, Prefix: cfg.Prefix, Origin: b.id}
	var err error
	if b.tokens, err = auth.NewTokens(cfg.Tokens, cfg.AdminTokens); err != nil {
		return nil, err
	}
	b.accounts = auth.NewAccounts(cfg.NATSAccounts)
	// The consumer state: the hot tail (fed by fusion's commit hook below)
	// and the marks (fed by the read side's announcements).
	tail := cursors.NewTail(cfg.TailCacheBytes)
	var marks *cursors.Marks
	if marks, err = cursors.NewMarks(cfg.DB); err != nil {
		return nil, err
	}
	// A deleted queue, here or on a peer, is forgotten by every room that
	// keeps something of it.
	dropped := func(tenant tenancy.TenantID, queue string, partitions []int64) {
		b.reads.Dropped(tenant, queue)
		marks.Drop(tenant, queue)
		tail.Drop(tenant, queue, partitions)
		b.jsc.dropped(tenant, queue)
		cfg.Fusion.Forget(tenant, queue)
	}
	if b.queues, err = queues.New(queues.Config{DB: cfg.DB, Peers: link, EncryptionKeys: cfg.EncryptionKeys,
		CacheTTL: cfg.QueueCacheTTL, Logger: cfg.Logger, OnDrop: dropped}); err != nil {
		return nil, err
	}
	if b.jsc, err = b.newJSConsumers(tail); err != nil {
		return nil, err
	}
	// The read side's announcements steer the marks and wake the JetStream
	// consumers.
	var heard readside.Listener = marks
	if b.jsc != nil {
		heard = listeners{marks, b.jsc.engine}
	}
	rc := readside.Config{DB: cfg.DB, Peers: link, DisableHotlist: cfg.DisableHotlist, Listener: heard}
	if b.jsc != nil { // peers' tombstones reach the copies the JetStream consumers here hold
		rc.Tombstones = b.jsc.engine
	}
	if b.reads, err = readside.New(rc); err != nil {
		return nil, err
	}
	if b.keeper, err = durability.New(durability.Config{DB: cfg.DB, Fusion: cfg.Fusion, Spool: cfg.Spool, Peers: link,
		MaintenancePoll: cfg.MaintenancePoll, DrainInterval: cfg.DrainInterval, RetentionInterval: cfg.RetentionInterval,
		Logger: cfg.Logger}); err != nil {
		return nil, err
	}
	if m == nil {
		m = metrics.New(cfg.Registry)
	}
	b.metrics = m
	if b.router, err = ownership.New(ownership.Config{NATS: cfg.NATS, Prefix: cfg.Prefix, ID: b.id, Fusion: cfg.Fusion,
		Buckets: cfg.Buckets, Heartbeat: cfg.Heartbeat, ForwardTimeout: cfg.ForwardTimeout, Gather: cfg.ForwardGather,
		Refuse: b.keeper.Maintenance, OnForward: m.ForwardLatency, Logger: cfg.Logger}); err != nil {
		return nil, err
	}
	if len(cfg.JetStream) > 0 && cfg.NATS == nil {
		return nil, errors.New("bridge: Config.JetStream needs Config.NATS")
	}
	if b.js, err = jetstream.New(jetstream.Config{NATS: cfg.NATS, Streams: cfg.JetStream, Prefix: cfg.Prefix, Push: b,
		Accounts: b.accounts, MaxBodyBytes: cfg.MaxBodyBytes, Logger: cfg.Logger}); err != nil {
		return nil, err
	}
	if b.relay, err = publish.New(publish.Config{Sources: cfg.Publish, Push: b, Positions: cfg.DB,
		Retry: cfg.PublishRetry, MaxBatch: min(256, cfg.MaxPartitionsPerRequest), MaxLagBytes: cfg.PublishMaxLagBytes,
		MaxLag: cfg.PublishMaxLag, Logger: cfg.Logger}); err != nil {
		return nil, err
	}
	if b.pusher, err = push.New(push.Config{Fusion: cfg.Fusion, Router: b.router, Queues: b.queues, Keeper: b.keeper, Reads: b.reads,
		Observer: m, MaxPartitionsPerRequest: cfg.MaxPartitionsPerRequest, Stopping: b.gate.Closed}); err != nil {
		return nil, err
	}
	if b.consumer, err = consume.New(consume.Config{DB: cfg.DB, Reads: b.reads, Marks: marks, Payloads: b.queues,
		Maintenance: b.keeper.Maintenance, PopMaintenance: b.keeper.PopMaintenance, Observer: m, Tail: tail,
		DefaultSubscriptionMode: cfg.DefaultSubscriptionMode, Pushes: b.pusher, Stopping: b.gate.Closed}); err != nil {
		return nil, err
	}
	if b.admin, err = admin.New(admin.Config{DB: cfg.DB, Consumer: b.consumer, Queues: b.queues, Keeper: b.keeper,
		Logger: cfg.Logger}); err != nil {
		return nil, err
	}
	mc := readside.MessagesConfig{DB: cfg.DB, Payloads: b.queues, Peers: link}
	if b.jsc != nil { // JetStream consumers hold messages in memory; Queen's pops check the tombstones
		mc.Tombstones = b.jsc.engine
	}
	if b.messages, err = readside.NewMessages(mc); err != nil {
		return nil, err
	}
	if b.console, err = console.New(console.Config{Bridge: b.id, Figures: func() console.Figures {
		f, k := cfg.Fusion.Stats(), b.keeper.Stats()
		ids, owned := b.router.Shares()
		return console.Figures{Pushed: f.ItemsFired, Consumed: b.consumer.Stats().Delivered, Commits: f.Bundles - min(f.BundleErrors, f.Bundles), Segments: f.Segments,
			BundlesInFlight: f.PermitsInUse, InFlightLimit: f.InFlightLimit, Flush: f.FlushTime, BundleLatency: f.BundleLatency,
			Maintenance: k.Maintenance, PopMaintenance: k.PopMaintenance, SpoolRecords: k.SpoolRecords, SpoolBytes: k.SpoolBytes,
			SpoolHealthy: k.SpoolHealthy, Members: ids, Owned: owned, Publish: b.publishFigures()}
	}}); err != nil {
		return nil, err
	}
	cfg.Fusion.SetOnCommitted(func(writes []segment.Write, results []segment.Result) {
		tail.Committed(writes, results)
		b.jsc.committed(writes, results)
	})
	m.RegisterJetStream(b.js)
	if b.jsc != nil {
		m.RegisterJSConsumers(b.jsc.engine, b.jsc.forwards)
	}
	m.RegisterPublish(b.relay)
	cfg.Fusion.SetSummaryFields(b.router.SummaryFields)
	m.RegisterFusion(cfg.Fusion)
	m.RegisterRooms(metrics.Rooms{DB: cfg.DB, Keeper: b.keeper, Reads: b.reads, Consumer: b.consumer, Queues: b.queues, Router: b.router,
		InflightBodyBytes: b.budget.InUse, NATSTooLarge: b.natsTooLarge.Load})
	return b, nil
}

// ID names this bridge in broadcasts.
func (b *Bridge) ID() string { return b.id }

// Start starts the rooms (durability first: pushes read its maintenance
// flag), then registers the NATS service and opens the HTTP listener.
func (b *Bridge) Start(ctx context.Context) error {
	if err := b.keeper.Start(ctx); err != nil {
		return err
	}
	if err := b.reads.Start(ctx); err != nil {
		return err
	}
	if err := b.queues.Start(ctx); err != nil {
		return err
	}
	if err := b.console.Start(ctx); err != nil {
		return err
	}
	if b.cfg.NATS != nil {
		b.gate.StartWorkers(b.cfg.Workers)
		if err := b.startNATS(); err != nil {
			return err
		}
		if err := b.js.Start(ctx); err != nil {
			return err
		}
		if err := b.router.Start(); err != nil {
			return err
		}
		// After the router: the engine asks it who owns a consumer.
		if err := b.jsc.start(ctx, &b.cfg); err != nil {
			return err
		}
		// A round trip, so that the server has every subscription (the
		// endpoints, the broadcasts) before Start returns: a request sent
		// right after must find the service. On a busy machine a tenant's
		// first request through its account import could otherwise arrive
		// before the subscription and wait out its timeout.
		if err := b.cfg.NATS.FlushTimeout(30 * time.Second); err != nil {
			return fmt.Errorf("bridge: nats flush after subscribing: %w", err)
		}
	}
	// The relay pushes on its own goroutines (no worker needed), so it
	// runs with or without NATS.
	if err := b.relay.Start(ctx); err != nil {
		return err
	}
	var err error
	if b.cfg.HTTPAddr != "" {
		if b.httpSrv, err = httpserve.Listen(b.cfg.HTTPAddr, b.httpHandler(), b.cfg.Logger, b.leanPush()); err != nil {
			return fmt.Errorf("bridge: %w", err)
		}
	}
	if b.cfg.MetricsAddr != "" {
		mux := http.NewServeMux()
		for _, p := range metricsPaths {
			mux.Handle(p, b.metrics.Handler())
		}
		if b.metricsSrv, err = httpserve.Listen(b.cfg.MetricsAddr, mux, b.cfg.Logger); err != nil {
			return fmt.Errorf("bridge: %w", err)
		}
	}
	return nil
}

// MetricsAddr is the address of the metrics-only listener ("" without one).
func (b *Bridge) MetricsAddr() string { return b.metricsSrv.Addr() }

// HTTPAddr is the address the HTTP API listens on ("" without one).
func (b *Bridge) HTTPAddr() string { return b.httpSrv.Addr() }

// Stop closes intake (new requests are answered 503), then waits, within
// ctx, until every accepted request has been answered, then stops the rooms.
// Fusion must still be running while it waits. Idempotent.
func (b *Bridge) Stop(ctx context.Context) error {
	b.stopOnce.Do(func() {
		var errs []error
		// JetStream intake first, while pushes are still taken: what the
		// server delivered here is written; it sends the rest to the
		// other bridges of the queue group.
		if err := b.js.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
		// JetStream consumers: their parked requests hear 408 and pull
		// again from another bridge; acknowledgements taken are stored.
		if err := b.jsc.stop(ctx); err != nil {
			errs = append(errs, err)
		}
		// The relay likewise: its push in progress is answered and
		// confirmed; the slot is left for the next bridge.
		if err := b.relay.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
		b.gate.Close()
		// Parked reads and pops answer now (empty): their clients ask
		// again, and the other bridges answer them.
		b.reads.Unpark()
		// The others hear this bridge leave and write what they would have
		// forwarded here; forwarded groups already in fusion are answered.
		if err := b.router.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
		if b.svc != nil {
			if err := b.svc.Stop(); err != nil {
				errs = append(errs, err)
			}
		}
		b.gate.StopWorkers()
		for _, srv := range []*httpserve.Server{b.httpSrv, b.metricsSrv} {
			if err := srv.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("bridge: %w", err))
			}
		}
		if err := b.gate.Wait(ctx); err != nil {
			errs = append(errs, fmt.Errorf("bridge: requests still unanswered: %w", err))
		}
		// Parked reads answer empty; a drain in progress finishes its
		// chunk: fusion is still running. The console's sampler reads the
		// others' figures, so it stops first.
		for _, room := range []interface{ Stop(context.Context) error }{b.console, b.reads, b.queues, b.keeper} {
			if err := room.Stop(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		b.stopErr = errors.Join(errs...)
	})
	return b.stopErr
}
