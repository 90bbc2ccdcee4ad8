package schema

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLockKey is the advisory lock every migrating bridge takes, so that
// several bridges starting at once apply each migration exactly once.
const migrationLockKey = 0x7175_6565_6e00 // "queen\0"

type migration struct {
	version int
	name    string
	sql     string
	// outside holds the statements of a migration that runs outside the
	// transaction (migrate_plan.go); nil for one that runs inside it.
	outside []outsideStatement
}

func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("schema: migration file %q must start with a number and '_'", e.Name())
		}
		body, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		m := migration{version: v, name: e.Name(), sql: string(body)}
		if err := m.plan(); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("schema: two migrations numbered %d", out[i].version)
		}
	}
	return out, nil
}

// Config says how Migrate waits for its locks.
type Config struct {
	// LockTimeout bounds each wait of a migration statement for a lock (its
	// lock_timeout): on expiry the statement gives up, so that the live
	// statements queued behind it go on, and is tried again after a pause
	// (migrate_wait.go). Keep it below PostgreSQL's deadlock_timeout. At
	// least 1ms. Default: 500ms.
	LockTimeout time.Duration
	// OnWait, when set, hears of every migration step that gave up waiting
	// for a lock and will try again: which lock, and who holds it. Called on
	// Migrate's goroutine. Default: nil (not reported).
	OnWait func(Wait)
}

func (c *Config) applyDefaults() error {
	if c.LockTimeout == 0 {
		c.LockTimeout = 500 * time.Millisecond
	}
	if c.LockTimeout < time.Millisecond {
		return fmt.Errorf("schema: LockTimeout must be at least 1ms, got %s", c.LockTimeout)
	}
	return nil
}

// migrator is one run of Migrate: the pool it takes its connection from
// and watches its waits through, and how it waits.
type migrator struct {
	pool *pgxpool.Pool
	cfg  Config
}

// Migrate brings the queen schema of pool's database up to date: the
// numbered migrations not applied yet, in order, then the function files
// whose text changed (functions.go). The migrations that run inside a
// transaction and the function files run in one, so that no bridge sees
// half of them; the index migrations run after it, outside a transaction,
// CONCURRENTLY (migrate_plan.go). A session advisory lock is held
// throughout: a bridge migrating at the same moment waits, then finds
// everything applied. Every step waits its turn for its locks
// (migrate_wait.go). Idempotent.
func Migrate(ctx context.Context, pool *pgxpool.Pool, cfg Config) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	fns, err := functions()
	if err != nil {
		return err
	}
	return run(ctx, pool, cfg, ms, fns)
}

// run applies ms, then fns, with cfg's defaults applied.
func run(ctx context.Context, pool *pgxpool.Pool, cfg Config, ms []migration, fns []function) error {
	if err := cfg.applyDefaults(); err != nil {
		return err
	}
	return (&migrator{pool: pool, cfg: cfg}).migrate(ctx, ms, fns)
}

// migrate applies ms, then fns, as Migrate describes.
//
// It runs on a connection of its own, taken out of the pool, without the
// statement timeout (StatementTimeout bounds the bridge's own statements,
// withConn): a migration may rewrite every row of a table, and a bridge
// that starts while another migrates waits for the lock. ctx bounds it. The
// connection is closed at the end, which also ends its session settings
// and its advisory lock.
func (mg *migrator) migrate(ctx context.Context, ms []migration, fns []function) error {
	pc, err := mg.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("schema: migration connection: %w", err)
	}
	conn := pc.Hijack()
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, fmt.Sprintf("SET lock_timeout = %d", mg.cfg.LockTimeout.Milliseconds())); err != nil {
		return fmt.Errorf("schema: migration lock_timeout: %w", err)
	}
	if err := mg.untilLocked(ctx, conn, "migration lock (another bridge is migrating)", func() error {
		_, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(migrationLockKey))
		return err
	}); err != nil {
		return fmt.Errorf("schema: migration lock: %w", err)
	}
	var applied map[int]bool
	if err := mg.untilLocked(ctx, conn, "migration transaction (numbered migrations and function files)", func() (err error) {
		applied, err = migrateInTransaction(ctx, conn, ms, fns)
		return err
	}); err != nil {
		return err
	}
	for _, m := range ms {
		if m.outside == nil || applied[m.version] {
			continue
		}
		if err := mg.migrateOutside(ctx, conn, m); err != nil {
			return err
		}
	}
	return nil
}

// migrateInTransaction runs, in one transaction, the migrations of ms that
// run inside one and are not applied yet, and the function files (unless a
// newer bridge migrated last); it answers the versions applied before it
// ran. A failure rolls all of it back.
func migrateInTransaction(ctx context.Context, conn *pgx.Conn, ms []migration, fns []function) (map[int]bool, error) {
	applied := map[int]bool{}
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS queen;
			CREATE TABLE IF NOT EXISTS queen.schema_migrations (
				version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("schema: create schema_migrations: %w", err)
		}
		newest := 0 // the highest version applied, by this bridge or another
		rows, err := tx.Query(ctx, "SELECT version FROM queen.schema_migrations")
		if err != nil {
			return fmt.Errorf("schema: read schema_migrations: %w", err)
		}
		versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			return fmt.Errorf("schema: read schema_migrations: %w", err)
		}
		for _, v := range versions {
			applied[v] = true
			newest = max(newest, v)
		}
		var pending []string
		for _, m := range ms {
			if !applied[m.version] && m.outside == nil {
				pending = append(pending, m.sql)
			}
		}
		for _, l := range preLocks(pending) {
			// A table a pending migration makes before altering it does
			// not exist yet: nobody else can hold it either.
			if _, err := tx.Exec(ctx, `DO $$ BEGIN IF to_regclass('`+l.table+`') IS NOT NULL THEN
				LOCK TABLE `+l.table+` IN `+l.mode+` MODE; END IF; END $$`); err != nil {
				return fmt.Errorf("schema: lock %s for the migrations: %w", l.table, err)
			}
		}
		known := 0 // the highest version this bridge knows
		for _, m := range ms {
			known = max(known, m.version)
			if applied[m.version] || m.outside != nil {
				continue
			}
			// Exec without arguments uses the simple protocol, which takes a
			// file of several statements.
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("schema: apply migration %s: %w", m.name, err)
			}
			if err := recordMigration(ctx, tx, m); err != nil {
				return err
			}
		}
		// A bridge that does not know every applied migration is older than
		// the one that migrated last (a rollback, or an old bridge restarting
		// during a rolling upgrade): the function texts are the newer
		// bridge's, and stay.
		if len(fns) == 0 || newest > known {
			return nil
		}
		return applyFunctions(ctx, tx, fns)
	})
	return applied, err
}

// recordMigration records m as applied.
func recordMigration(ctx context.Context, q interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, m migration) error {
	if _, err := q.Exec(ctx, `INSERT INTO queen.schema_migrations (version, name) VALUES ($1, $2)
		ON CONFLICT (version) DO NOTHING`, m.version, m.name); err != nil {
		return fmt.Errorf("schema: record migration %s: %w", m.name, err)
	}
	return nil
}

// migrateOutside runs a migration's statements outside a transaction, each
// waiting its turn for its locks, then records it. Each is idempotent (IF
// [NOT] EXISTS), so a bridge that stopped half-way runs them all again; an
// index that a failed CONCURRENTLY build left invalid (IF NOT EXISTS would
// keep it) is dropped before it is built again.
func (mg *migrator) migrateOutside(ctx context.Context, conn *pgx.Conn, m migration) error {
	for _, st := range m.outside {
		if err := mg.untilLocked(ctx, conn, m.name+": "+st.sql, func() error {
			if st.index != "" {
				var invalid bool
				err := conn.QueryRow(ctx, `SELECT coalesce((SELECT NOT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)), false)`,
					st.index).Scan(&invalid)
				if err != nil {
					return err
				}
				if invalid {
					if _, err := conn.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+st.index); err != nil {
						return err
					}
				}
			}
			_, err := conn.Exec(ctx, st.sql)
			return err
		}); err != nil {
			return fmt.Errorf("schema: apply migration %s (outside a transaction): %w", m.name, err)
		}
	}
	return recordMigration(ctx, conn, m)
}
