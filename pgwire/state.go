package pgwire

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Maintenance reads the maintenance flag from queen.system_state.
func (db *DB) Maintenance(ctx context.Context) (bool, error) {
	var on bool
	err := db.queryRow(ctx, func(r pgx.Row) error { return r.Scan(&on) },
		`SELECT coalesce((value->>'enabled')::boolean, false) FROM queen.system_state WHERE key = 'maintenance'`)
	if err != nil {
		return false, fmt.Errorf("pgwire: read maintenance flag: %w", err)
	}
	return on, nil
}

// SetMaintenance stores the maintenance flag.
func (db *DB) SetMaintenance(ctx context.Context, on bool) error {
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		_, err := conn.Exec(ctx, `INSERT INTO queen.system_state (key, value) VALUES ('maintenance', jsonb_build_object('enabled', $1::boolean))
			ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`, on)
		return err
	})
	if err != nil {
		return fmt.Errorf("pgwire: set maintenance flag: %w", err)
	}
	return nil
}
