package pgwire

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
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
	return db.setSwitch(ctx, "maintenance", "maintenance flag", on)
}
