package pgwire

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/storage"
)

// ReadSwitches reads every switch in one statement (the maintenance poll).
func (db *DB) ReadSwitches(ctx context.Context) (storage.Switches, error) {
	var s storage.Switches
	err := db.queryRow(ctx, func(r pgx.Row) error { return r.Scan(&s.Maintenance, &s.PopMaintenance) },
		`SELECT coalesce(bool_or((value->>'enabled')::boolean) FILTER (WHERE key = 'maintenance'), false),
		        coalesce(bool_or((value->>'enabled')::boolean) FILTER (WHERE key = 'pop_maintenance'), false)
		FROM queen.system_state WHERE key IN ('maintenance', 'pop_maintenance')`)
	if err != nil {
		return s, fmt.Errorf("pgwire: read switches: %w", err)
	}
	return s, nil
}

// SetPopMaintenance stores the pop maintenance switch.
func (db *DB) SetPopMaintenance(ctx context.Context, on bool) error {
	return db.setSwitch(ctx, "pop_maintenance", "pop maintenance", on)
}

// setSwitch stores the switch under key (what names it in errors).
func (db *DB) setSwitch(ctx context.Context, key, what string, on bool) error {
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		_, err := conn.Exec(ctx, `INSERT INTO queen.system_state (key, value) VALUES ($1, jsonb_build_object('enabled', $2::boolean))
			ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`, key, on)
		return err
	})
	if err != nil {
		return fmt.Errorf("pgwire: set %s: %w", what, err)
	}
	return nil
}
