package pgwire

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
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
			return nil, fmt.Errorf("pgwire: migration file %q must start with a number and '_'", e.Name())
		}
		body, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("pgwire: two migrations numbered %d", out[i].version)
		}
	}
	return out, nil
}

// Migrate brings the queen schema up to date: the numbered migrations not
// applied yet, in order, then the function files whose text changed
// (functions.go). It runs in one transaction under a transaction-scoped
// advisory lock: a second bridge migrating at the same moment waits, then
// finds everything applied. Idempotent.
func (db *DB) Migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	fns, err := functions()
	if err != nil {
		return err
	}
	return db.migrate(ctx, ms, fns)
}

// migrate applies ms, then fns, as Migrate describes.
//
// It runs on the pool without the statement timeout (StatementTimeout bounds
// the bridge's own statements, withConn): a migration may rewrite every row
// of a table, and a bridge that starts while another migrates waits for the
// lock. ctx bounds it.
func (db *DB) migrate(ctx context.Context, ms []migration, fns []function) error {
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLockKey)); err != nil {
			return fmt.Errorf("pgwire: migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS queen;
			CREATE TABLE IF NOT EXISTS queen.schema_migrations (
				version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("pgwire: create schema_migrations: %w", err)
		}
		applied := map[int]bool{}
		newest := 0 // the highest version applied, by this bridge or another
		rows, err := tx.Query(ctx, "SELECT version FROM queen.schema_migrations")
		if err != nil {
			return fmt.Errorf("pgwire: read schema_migrations: %w", err)
		}
		for rows.Next() {
			var v int
			if err := rows.Scan(&v); err != nil {
				return err
			}
			applied[v] = true
			newest = max(newest, v)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		known := 0 // the highest version this bridge knows
		for _, m := range ms {
			known = max(known, m.version)
			if applied[m.version] {
				continue
			}
			// Exec without arguments uses the simple protocol, which takes a
			// file of several statements.
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("pgwire: apply migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO queen.schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
				return fmt.Errorf("pgwire: record migration %s: %w", m.name, err)
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
}
