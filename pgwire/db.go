package pgwire

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/pgwire/schema"
	"github.com/queenbridge/queenbridge/storage"
)

// Config says how to reach PostgreSQL.
type Config struct {
	// DSN is a PostgreSQL connection string. Required.
	DSN string
	// MaxConns bounds the pool. Default: 16.
	MaxConns int32
	// DefaultDedupWindowSeconds is the deduplication window of queues that a
	// push creates. Default: 60.
	DefaultDedupWindowSeconds int
	// AcquireTimeout bounds the wait for a pooled connection (and so for a
	// push waiting on a database that does not answer). Default: 1s.
	AcquireTimeout time.Duration
	// StatementTimeout bounds each statement the bridge sends: a bundle
	// call, a pop, a read (QUEEN_PG_STATEMENT_TIMEOUT_MS; conn.go). On
	// expiry a cancel request goes to the server on a fresh connection and
	// the pooled connection is destroyed. Default: 5s.
	StatementTimeout time.Duration
	// LeaseTime, for tests only: when set, every lease a pop takes or an
	// extension renews lasts this long, whatever its queue's leaseTime (a
	// whole number of seconds on the wire) or the seconds asked, so that a
	// test outlives a lease in milliseconds instead of sleeping seconds. It
	// reaches PostgreSQL as the session setting queen.lease_ms
	// (consumer_duration_v1), which a DSN may set too
	// ("...?queen.lease_ms=200", for a bridge a test starts as a process).
	// At least 1ms when set. Default: 0, off.
	LeaseTime time.Duration
	// MigrationLockTimeout bounds each wait of a migration statement for a
	// lock (its lock_timeout): on expiry the statement gives up, so that the
	// live statements queued behind it go on, and is tried again after a
	// pause (pgwire/schema/migrate_wait.go). Keep it below PostgreSQL's deadlock_timeout.
	// Default: 500ms.
	MigrationLockTimeout time.Duration
	// OnMigrationWait, when set, hears of every migration step that gave up
	// waiting for a lock and will try again: which lock, and who holds it.
	// Called on Migrate's goroutine. Default: nil (not reported).
	OnMigrationWait func(MigrationWait)
}

func (c *Config) applyDefaults() error {
	if c.DSN == "" {
		return errors.New("pgwire: DSN is required")
	}
	if c.MaxConns == 0 {
		c.MaxConns = 16
	}
	if c.MaxConns < 1 {
		return fmt.Errorf("pgwire: MaxConns must be at least 1, got %d", c.MaxConns)
	}
	if c.DefaultDedupWindowSeconds == 0 {
		c.DefaultDedupWindowSeconds = 60
	}
	if c.AcquireTimeout == 0 {
		c.AcquireTimeout = time.Second
	}
	if c.StatementTimeout == 0 {
		c.StatementTimeout = 5 * time.Second
	}
	if c.MigrationLockTimeout == 0 {
		c.MigrationLockTimeout = 500 * time.Millisecond
	}
	if c.MigrationLockTimeout < time.Millisecond {
		return fmt.Errorf("pgwire: MigrationLockTimeout must be at least 1ms, got %s", c.MigrationLockTimeout)
	}
	if c.AcquireTimeout < 0 || c.StatementTimeout < 0 {
		return errors.New("pgwire: timeouts must not be negative")
	}
	if c.LeaseTime < 0 || c.LeaseTime > 0 && c.LeaseTime < time.Millisecond {
		return fmt.Errorf("pgwire: LeaseTime must be 0 (off) or at least 1ms, got %s", c.LeaseTime)
	}
	if c.DefaultDedupWindowSeconds < 0 {
		return fmt.Errorf("pgwire: DefaultDedupWindowSeconds must be >= 0, got %d", c.DefaultDedupWindowSeconds)
	}
	return nil
}

// sessionSettings are set on every connection of the pool (Open).
var sessionSettings = map[string]string{
	"enable_seqscan":  "off",
	"plan_cache_mode": "force_generic_plan",
}

// DB is a pool of connections to the queen database.
type DB struct {
	cfg Config
	// arraysOnly sends a lone claim or acknowledgement through the
	// statement for many (set by tests, before any call, to hold both
	// forms to the same answers).
	arraysOnly  bool
	pool        *pgxpool.Pool
	timeouts    atomic.Uint64
	quarantined atomic.Uint64
	retries     retryCounts
	// migrationWaits counts the migration steps that gave up waiting for
	// a lock and tried again.
	migrationWaits atomic.Uint64
}

// connectTimeout bounds making one connection when the DSN sets no
// connect_timeout.
const connectTimeout = 10 * time.Second

// Open creates the pool. It does not connect until first use; call Ping or
// Migrate to find out whether the database answers.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	if err := cfg.applyDefaults(); err != nil {
		return nil, err
	}
	pc, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("pgwire: parse DSN: %w", err)
	}
	pc.MaxConns = cfg.MaxConns
	// A new connection (TCP, SCRAM, the backend's start) may take longer than
	// a push may wait for one: on a busy host SCRAM alone has taken over a
	// second. The pool builds connections apart from the acquire that asked
	// for them, so a push still gives up after AcquireTimeout while the
	// connection goes on being made for the next one; only a DSN's own
	// connect_timeout shortens this.
	if pc.ConnConfig.ConnectTimeout == 0 {
		pc.ConnConfig.ConnectTimeout = connectTimeout
	}
	// A cancelled query context sends a cancel request to the server (on a
	// fresh connection) right away, so the statement stops holding its locks;
	// if the server does not answer it within 2s the socket deadline ends the
	// wait.
	pc.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 2 * time.Second}
	}
	pc.ConnConfig.RuntimeParams["queen.default_dedup_window_s"] = strconv.Itoa(cfg.DefaultDedupWindowSeconds)
	if cfg.LeaseTime > 0 {
		pc.ConnConfig.RuntimeParams["queen.lease_ms"] = strconv.FormatInt(cfg.LeaseTime.Milliseconds(), 10)
	}
	// Every statement of the bridge is keyed (a partition, a queue, a range
	// of one partition): a sequential scan is never the plan it wants, and
	// one made while a table was small (a fresh deployment, before
	// autovacuum's first ANALYZE) would otherwise stay cached for the life of
	// the connection. The known-partition statement also relies on it for
	// its lock order (push_known.go). Generic plans: the bundle statements'
	// array parameters would otherwise be planned again on every call.
	for k, v := range sessionSettings {
		pc.ConnConfig.RuntimeParams[k] = v
	}
	if _, ok := pc.ConnConfig.RuntimeParams["application_name"]; !ok {
		pc.ConnConfig.RuntimeParams["application_name"] = "queen-bridge"
	}
	// The tracer tells withConn what a call's statements did, so that it
	// runs again only a call whose effect did not happen (retry.go).
	pc.ConnConfig.Tracer = callTracer{}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("pgwire: create pool: %w", err)
	}
	return &DB{cfg: cfg, pool: pool}, nil
}

// MigrationWait is what Migrate reports when a migration step gave up
// waiting for a lock and will try again (schema.Wait).
type MigrationWait = schema.Wait

// Migrate brings the queen schema up to date (schema.Migrate), waiting for
// each lock at most MigrationLockTimeout at a time and counting the steps
// that gave up and tried again (Stats.MigrationLockWaits).
func (db *DB) Migrate(ctx context.Context) error {
	return schema.Migrate(ctx, db.pool, db.schemaConfig())
}

// schemaConfig is how db's migrations wait for their locks.
func (db *DB) schemaConfig() schema.Config {
	return schema.Config{LockTimeout: db.cfg.MigrationLockTimeout, OnWait: func(w schema.Wait) {
		db.migrationWaits.Add(1)
		if db.cfg.OnMigrationWait != nil {
			db.cfg.OnMigrationWait(w)
		}
	}}
}

// Pool exposes the pool to tests and to read paths of this package.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Ping checks that a connection can be had and answers.
func (db *DB) Ping(ctx context.Context) error {
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error { return conn.Ping(ctx) })
	if err != nil {
		return fmt.Errorf("pgwire: ping: %w", err)
	}
	return nil
}

// Stats returns the counters.
func (db *DB) Stats() storage.Stats {
	return storage.Stats{StatementTimeouts: db.timeouts.Load(), QuarantinedConnection: db.quarantined.Load(), Retries: db.retries.snapshot(),
		MigrationLockWaits: db.migrationWaits.Load()}
}

// Close closes every connection. Idempotent.
func (db *DB) Close() { db.pool.Close() }
