package pgwire

import (
	"context"
	"fmt"
)

// Maintenance reads the maintenance flag from queen.system_state.
func (db *DB) Maintenance(ctx context.Context) (bool, error) {
	var on bool
	err := db.pool.QueryRow(ctx, `SELECT coalesce((value->>'enabled')::boolean, false) FROM queen.system_state WHERE key = 'maintenance'`).Scan(&on)
	if err != nil {
		return false, fmt.Errorf("pgwire: read maintenance flag: %w", err)
	}
	return on, nil
}

// SetMaintenance stores the maintenance flag.
func (db *DB) SetMaintenance(ctx context.Context, on bool) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO queen.system_state (key, value) VALUES ('maintenance', jsonb_build_object('enabled', $1::boolean))
		ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`, on)
	if err != nil {
		return fmt.Errorf("pgwire: set maintenance flag: %w", err)
	}
	return nil
}
