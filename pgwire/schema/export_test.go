package schema

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"
)

// MigrateTo applies the numbered migrations up to version upTo and no
// function file: the schema as a bridge of that step left it.
func MigrateTo(ctx context.Context, pool *pgxpool.Pool, upTo int) error {
	return migrateUpTo(ctx, pool, upTo, nil)
}

// MigrateOlder migrates as a bridge of step upTo did: the numbered
// migrations up to upTo, then the function files of that bridge, in
// fsys's directory functions.
func MigrateOlder(ctx context.Context, pool *pgxpool.Pool, upTo int, fsys fs.FS) error {
	fns, err := functionsIn(fsys)
	if err != nil {
		return err
	}
	return migrateUpTo(ctx, pool, upTo, fns)
}

// migrateUpTo applies the numbered migrations up to version upTo, then fns.
func migrateUpTo(ctx context.Context, pool *pgxpool.Pool, upTo int, fns []function) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	var keep []migration
	for _, m := range ms {
		if m.version <= upTo {
			keep = append(keep, m)
		}
	}
	return run(ctx, pool, Config{}, keep, fns)
}

// MigrateEdited migrates as Migrate does, with the function files' texts as
// edit returns them: a bridge whose function files differ.
func MigrateEdited(ctx context.Context, pool *pgxpool.Pool, edit func(name, sql string) string) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	fns, err := functions()
	if err != nil {
		return err
	}
	for i := range fns {
		if sql := edit(fns[i].name, fns[i].sql); sql != fns[i].sql {
			sum := sha256.Sum256([]byte(sql))
			fns[i].sql, fns[i].sha = sql, hex.EncodeToString(sum[:])
		}
	}
	return run(ctx, pool, Config{}, ms, fns)
}

// PlanMigration reads how a migration file of that version would run: its
// statements outside a transaction (nil: inside one), or why it is
// refused.
func PlanMigration(version int, name, sql string) ([]string, error) {
	m := migration{version: version, name: name, sql: sql}
	if err := m.plan(); err != nil {
		return nil, err
	}
	var out []string
	for _, s := range m.outside {
		out = append(out, s.sql)
	}
	return out, nil
}

// ApplyMigration applies one migration file of that version as Migrate
// applies a pending one.
func ApplyMigration(ctx context.Context, pool *pgxpool.Pool, version int, name, sql string) error {
	m := migration{version: version, name: name, sql: sql}
	if err := m.plan(); err != nil {
		return err
	}
	return run(ctx, pool, Config{}, []migration{m}, nil)
}

// PreLocks lists the table locks the migration transaction takes first for
// migrations of these texts, as "MODE table", in the order it takes them.
func PreLocks(sqls ...string) []string {
	var out []string
	for _, l := range preLocks(sqls) {
		out = append(out, l.mode+" "+l.table)
	}
	return out
}
