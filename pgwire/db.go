package pgwire

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"
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
	if c.DefaultDedupWindowSeconds < 0 {
		return fmt.Errorf("pgwire: DefaultDedupWindowSeconds must be >= 0, got %d", c.DefaultDedupWindowSeconds)
	}
	return nil
}

// DB is a pool of connections to the queen database.
type DB struct {
	cfg  Config
	pool *pgxpool.Pool
}

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
	pc.ConnConfig.RuntimeParams["queen.default_dedup_window_s"] = strconv.Itoa(cfg.DefaultDedupWindowSeconds)
	if _, ok := pc.ConnConfig.RuntimeParams["application_name"]; !ok {
		pc.ConnConfig.RuntimeParams["application_name"] = "queen-bridge"
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("pgwire: create pool: %w", err)
	}
	return &DB{cfg: cfg, pool: pool}, nil
}

// Pool exposes the pool to tests and to read paths of this package.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Ping checks that a connection can be had and answers.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.pool.Ping(ctx); err != nil {
		return fmt.Errorf("pgwire: ping: %w", err)
	}
	return nil
}

// Close closes every connection. Idempotent.
func (db *DB) Close() { db.pool.Close() }
