package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"slices"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/queenbridge/queenbridge/auth"
	"github.com/queenbridge/queenbridge/bridge"
	"github.com/queenbridge/queenbridge/embedded"
	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/internal/procs"
	"github.com/queenbridge/queenbridge/jetstream"
	"github.com/queenbridge/queenbridge/metrics"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/spool"
	"github.com/rs/zerolog"
)

func main() {
	// Message ids are UUIDv7: draw their random bits from a pool rather
	// than one crypto/rand read per id. Ids are not secrets; this must happen
	// before any goroutine mints one.
	uuid.EnableRandPool()
	cfg, err := load(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "queen-bridge:", err)
		os.Exit(2)
	}
	if os.Getenv("GOGC") == "" {
		// The bridge's heap is mostly short-lived request garbage beside a
		// bounded long-lived part (the recent-hash tables); collecting at 4×
		// the live heap instead of 2× took its CPU per item at 64 clients ×
		// 1 item from 35.6 to 29.9 µs (median of 3, docs/request-path.md).
		debug.SetGCPercent(cfg.gcPercent)
	}
	log, err := newLogger(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "queen-bridge:", err)
		os.Exit(2)
	}
	for _, msg := range cfg.deprecated {
		log.Warn().Str("target", "bridge").Msg(msg)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, log); err != nil {
		log.Error().Str("target", "bridge").Err(err).Msg("queen-bridge failed")
		os.Exit(1)
	}
}

func newLogger(cfg *config) (zerolog.Logger, error) {
	level, err := zerolog.ParseLevel(cfg.logLevel)
	if err != nil {
		return zerolog.Logger{}, fmt.Errorf("QUEEN_LOG_LEVEL: %w", err)
	}
	zerolog.TimeFieldFormat = time.RFC3339Nano
	if cfg.logFormat == "console" {
		return zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: "15:04:05.000"}).Level(level).With().Timestamp().Logger(), nil
	}
	return zerolog.New(os.Stderr).Level(level).With().Timestamp().Logger(), nil
}

// run starts every part, waits for ctx (a signal), then stops them in order:
// intake first, then fusion's drain, then the connections and servers.
func run(ctx context.Context, cfg *config, log zerolog.Logger) error {
	if cfg.adaptiveProcs && os.Getenv("GOMAXPROCS") == "" {
		// Fewer Ps while the load is light: a lone request's goroutine
		// hand-offs then stay on one core instead of waking a spinning
		// thread on another (internal/procs, docs/request-path.md).
		pc, err := procs.New(procs.Config{})
		if err != nil {
			return err
		}
		if err := pc.Start(ctx); err != nil {
			return err
		}
		defer func() { _ = pc.Stop(context.Background()) }()
		log.Info().Str("target", "bridge").Int("max_procs", pc.Procs()).Msg("GOMAXPROCS follows the load, from 1 up to max_procs")
	}
	keys, err := cfg.encryptionKeys()
	if err != nil {
		return err
	}
	tokens, err := parseTokens("QUEEN_HTTP_TOKENS", cfg.httpTokens)
	if err != nil {
		return err
	}
	adminTokens, err := parseTokens("QUEEN_HTTP_ADMIN_TOKENS", cfg.httpAdminTokens)
	if err != nil {
		return err
	}
	accounts, err := parsePairs("QUEEN_NATS_ACCOUNTS", cfg.natsAccounts, "account")
	if err != nil {
		return err
	}
	natsAuth, err := cfg.natsOptions()
	if err != nil {
		return err
	}
	streams, err := cfg.streams()
	if err != nil {
		return err
	}
	// NATS first: its address is the one most often taken (another
	// bridge, a nats-server), and its failure is known at once, without
	// waiting for the embedded cluster's start (initdb on a first run).
	natsURL, natsWhere := cfg.natsURL, "external "+auth.URL(cfg.natsURL)
	leafURL, leafUser, leafPassword := cfg.natsLeafURL, cfg.natsLeafUser, cfg.natsLeafPassword
	leafLogins, err := cfg.leafLogins(accounts)
	if err != nil {
		return err
	}
	natsOpts := append([]nats.Option{nats.Name("queen-bridge"), nats.MaxReconnects(-1)}, natsAuth...)
	if natsURL == "" {
		// In the accounts mode each account gets a leaf user of its own:
		// a leaf connection delivers into one account only.
		ns, err := embedded.StartNATS(embedded.NATSConfig{Listen: cfg.natsListen, ConfigFile: cfg.natsConfig, LeafAccounts: slices.Sorted(maps.Keys(accounts))})
		if errors.Is(err, embedded.ErrNATSListen) {
			return fmt.Errorf("%w (QUEEN_NATS_LISTEN sets another address, QUEEN_NATS_URL an external server)", err)
		}
		if err != nil {
			return err
		}
		defer ns.Stop()
		natsURL, natsWhere = ns.ClientURL(), "embedded "+ns.ClientURL()
		leafURL, leafUser, leafPassword = ns.LeafURL(), embedded.LeafUser, ns.LeafPassword()
		leafLogins = embeddedLeafLogins(ns, accounts)
		// The bridge's own connection to its embedded server is in-process
		// (a pipe, not loopback TCP): no socket system calls on either side
		// for every request and answer. Clients still use the TCP listener.
		natsOpts = append(natsOpts, nats.InProcessServer(ns.Server()))
	}
	dsn, pgWhere := cfg.pgDSN, "external"
	if dsn == "" {
		pg, err := embedded.StartPostgres(ctx, embedded.Config{DataDir: filepath.Join(cfg.dataDir, "pg")})
		if errors.Is(err, embedded.ErrDataDirInUse) {
			return fmt.Errorf("%w (QUEEN_DATA_DIR)", err)
		}
		if err != nil {
			return err
		}
		defer func() {
			if err := pg.Stop(context.Background()); err != nil {
				log.Warn().Str("target", "bridge").Err(err).Msg("embedded postgres stop")
			}
		}()
		dsn, pgWhere = pg.DSN(), fmt.Sprintf("embedded 127.0.0.1:%d, data %s, passwords in %s", pg.Port(), pg.DataDir(), pg.CredentialsFile())
		if want, _ := filepath.Abs(filepath.Join(cfg.dataDir, "pg")); pg.DataDir() != want {
			log.Warn().Str("target", "bridge").Str("wanted", want).Str("using", pg.DataDir()).
				Msg("the postgres account cannot reach the data directory (a parent is not searchable); the embedded cluster lives elsewhere")
		}
	}
	nc, err := nats.Connect(natsURL, natsOpts...)
	if err != nil {
		return fmt.Errorf("connect to NATS %s: %w", auth.URL(natsURL), err)
	}
	defer nc.Close()

	sp, err := spool.Open(spool.Config{Dir: cfg.spoolDir, MaxBytes: cfg.spoolMaxBytes})
	if err != nil {
		return err
	}
	defer sp.Close()
	if st := sp.Stats(); st.SkippedBytes > 0 {
		log.Warn().Str("target", "spool").Int64("skipped_bytes", st.SkippedBytes).Int64("records", st.Records).
			Msg("damaged spool records were passed over; every whole record after them is kept and will be replayed")
	}

	db, err := pgwire.Open(ctx, pgwire.Config{DSN: dsn, MaxConns: int32(cfg.pgPoolSize), DefaultDedupWindowSeconds: cfg.dedupWindowS,
		StatementTimeout: time.Duration(cfg.pgStatementTimeoutMS) * time.Millisecond,
		// A migration that keeps giving way to live statements says which
		// lock it waits for and who holds it (docs/operations.md).
		OnMigrationWait: func(w pgwire.MigrationWait) {
			log.Warn().Str("target", "pgwire").Str("step", w.Step).Int("tries", w.Tries).Dur("waited", w.Waited).
				Str("lock", w.Lock).Strs("held_by", w.Blockers).Msg("migration waiting for a lock; the bridges serve meanwhile")
		}})
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	meters := metrics.New(reg)
	fu, err := fusion.New(fusion.Config{
		Sink: db, Shards: cfg.shards, BundleMax: cfg.bundleMax, BundleMaxBytes: cfg.bundleMaxBytes, HoldTick: time.Duration(cfg.holdMS) * time.Millisecond,
		InFlightMin: cfg.inFlightMin, InFlightMax: cfg.inFlightMax, RecentHashBytes: cfg.recentHashBytes, Logger: log, OnBundle: meters.FusionHook,
	})
	if err != nil {
		return err
	}
	if err := fu.Start(ctx); err != nil {
		return err
	}
	br, err := bridge.New(bridge.Config{
		DB: db, Fusion: fu, NATS: nc, Prefix: cfg.natsPrefix, HTTPAddr: cfg.httpAddr, MaxBodyBytes: cfg.maxBodyBytes,
		MaxInflightBytes: cfg.maxInflightBytes, MaxParked: cfg.maxParkedReads, TailCacheBytes: tailBytes(cfg.tailCacheBytes),
		MaxPartitionsPerRequest: cfg.maxPartitionsPerRequest, DefaultSubscriptionMode: cfg.defaultSubscriptionMode, MaxTxnOperations: cfg.txnMaxOperations,
		BodyTimeout:    time.Duration(cfg.bodyTimeoutMS) * time.Millisecond,
		EncryptionKeys: keys, Tokens: tokens, AdminTokens: adminTokens, MetricsAddr: cfg.metricsAddr, NATSAccounts: accounts, Registry: reg, Logger: log, Spool: sp,
		DisableHotlist: !cfg.hotlist, RetentionInterval: retentionInterval(cfg.retentionMS),
		Buckets: cfg.buckets, Heartbeat: time.Duration(cfg.heartbeatMS) * time.Millisecond,
		ForwardTimeout: time.Duration(cfg.forwardTimeoutMS) * time.Millisecond, ForwardGather: time.Duration(cfg.forwardGatherUS) * time.Microsecond, JetStream: streams,
		LeafURL: leafURL, LeafUser: leafUser, LeafPassword: leafPassword, LeafLogins: leafLogins,
		Publish: cfg.publishSources(dsn), PublishMaxLagBytes: cfg.publishMaxLagBytes, PublishMaxLag: time.Duration(cfg.publishMaxLagMS) * time.Millisecond,
	}, meters)
	if err != nil {
		return err
	}
	if err := br.Start(ctx); err != nil {
		_ = fu.Stop(context.Background())
		return err
	}
	if cfg.pprofAddr != "" {
		stopPprof, err := servePprof(cfg.pprofAddr)
		if err != nil {
			return err
		}
		defer stopPprof()
	}
	log.Info().Str("target", "bridge").Str("nats", natsWhere).Str("subject", cfg.natsPrefix+".v1.push").
		Str("jetstream", orOff(jetstream.FormatStreams(streams))).Str("http", orOff(br.HTTPAddr())).Str("postgres", pgWhere).Str("spool", cfg.spoolDir).
		Int64("spooled", sp.Stats().Records).Msg("queen-bridge ready")

	<-ctx.Done()
	log.Info().Str("target", "bridge").Msg("shutting down: closing intake, draining in-flight pushes")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdownTimeout)
	defer cancel()
	if err := br.Stop(sctx); err != nil {
		log.Warn().Str("target", "bridge").Err(err).Msg("bridge stop")
	}
	if err := fu.Stop(sctx); err != nil {
		log.Warn().Str("target", "bridge").Err(err).Msg("fusion stop")
	}
	if err := nc.Flush(); err != nil {
		log.Warn().Str("target", "bridge").Err(err).Msg("nats flush")
	}
	log.Info().Str("target", "bridge").Msg("stopped")
	return nil
}

// retentionInterval maps QUEEN_RETENTION_INTERVAL_MS (0: never) to the
// bridge's setting (negative: never).
func retentionInterval(ms int) time.Duration {
	if ms <= 0 {
		return -1
	}
	return time.Duration(ms) * time.Millisecond
}

func orOff(addr string) string {
	if addr == "" {
		return "off"
	}
	return addr
}

// tailBytes maps QUEEN_TAIL_CACHE_BYTES to bridge.Config: 0 there means off
// (the Config's 0 is its default).
func tailBytes(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}
