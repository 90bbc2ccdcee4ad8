package pgwire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/storage"
)

const queueColumns = `tenant, name, namespace, task, encryption_enabled, dedup_window_seconds, retention_seconds, other_options, encryption_key_id`

// defaultWindowSQL is the window a new queue gets (the column default).
const defaultWindowSQL = `coalesce(nullif(current_setting('queen.default_dedup_window_s', true), '')::integer, 60)`

func scanQueue(row pgx.Row) (storage.Queue, error) {
	var q storage.Queue
	var tenant pgtype.UUID
	var other []byte
	var keyID *int16
	err := row.Scan(&tenant, &q.Name, &q.Namespace, &q.Task, &q.Options.EncryptionEnabled, &q.Options.DedupWindowSeconds, &q.Options.RetentionSeconds, &other, &keyID)
	if keyID != nil {
		q.Options.Keyed, q.Options.KeyID = true, uint8(*keyID)
	}
	if err == nil && len(other) > 0 {
		err = json.Unmarshal(other, &q.OtherOptions)
	}
	q.Tenant = tenant.Bytes
	q.Exists = err == nil
	return q, err
}

// LookupQueue reads a queue's settings; a queue that does not exist yet
// answers Exists=false with the defaults.
func (db *DB) LookupQueue(ctx context.Context, tenant tenancy.TenantID, name string) (storage.Queue, error) {
	var q storage.Queue
	err := db.queryRow(ctx, func(r pgx.Row) (err error) { q, err = scanQueue(r); return err },
		`SELECT `+queueColumns+` FROM queen.queues WHERE tenant = $1 AND name = $2`,
		pgtype.UUID{Bytes: tenant, Valid: true}, name)
	if errors.Is(err, pgx.ErrNoRows) {
		return storage.Queue{Tenant: tenant, Name: name, Options: storage.QueueOptions{DedupWindowSeconds: int32(db.cfg.DefaultDedupWindowSeconds)}}, nil
	}
	if err != nil {
		return q, fmt.Errorf("pgwire: look up queue %q: %w", name, err)
	}
	return q, nil
}

// ConfigureQueue creates the queue or updates the options set in upd, and
// returns the row as stored.
func (db *DB) ConfigureQueue(ctx context.Context, tenant tenancy.TenantID, name string, upd storage.QueueUpdate) (storage.Queue, error) {
	other := []byte("{}")
	if len(upd.Other) > 0 {
		var err error
		if other, err = json.Marshal(upd.Other); err != nil {
			return storage.Queue{}, fmt.Errorf("pgwire: configure queue %q: options: %w", name, err)
		}
	}
	var q storage.Queue
	err := db.queryRow(ctx, func(r pgx.Row) (err error) { q, err = scanQueue(r); return err }, `
		INSERT INTO queen.queues (tenant, name, namespace, task, encryption_enabled, dedup_window_seconds, retention_seconds, other_options)
		VALUES ($1, $2, split_part($2, '.', 1), split_part($2, '.', 2),
		        coalesce($3::boolean, false), coalesce($4::integer, `+defaultWindowSQL+`), coalesce($5::integer, 0), $6::jsonb)
		ON CONFLICT (tenant, name) DO UPDATE SET
			encryption_enabled   = coalesce($3::boolean, queues.encryption_enabled),
			dedup_window_seconds = coalesce($4::integer, queues.dedup_window_seconds),
			retention_seconds    = coalesce($5::integer, queues.retention_seconds),
			other_options        = queues.other_options || $6::jsonb,
			updated_at           = now()
		RETURNING `+queueColumns,
		pgtype.UUID{Bytes: tenant, Valid: true}, name, upd.EncryptionEnabled, upd.DedupWindowSeconds, upd.RetentionSeconds, string(other))
	if err != nil {
		return q, fmt.Errorf("pgwire: configure queue %q: %w", name, err)
	}
	return q, nil
}

// RecordKeyID records that a payload of the queue is sealed under key id
// from now on: the queue's key id becomes the higher of the recorded one
// and id (so bridges racing through a rotation settle on the newest key).
// It returns the queue's settings as stored; found is false when the queue
// has no row (nothing recorded).
func (db *DB) RecordKeyID(ctx context.Context, tenant tenancy.TenantID, name string, id uint8) (q storage.Queue, found bool, err error) {
	err = db.queryRow(ctx, func(r pgx.Row) (err error) { q, err = scanQueue(r); return err },
		`UPDATE queen.queues SET encryption_key_id = GREATEST(encryption_key_id, $3::smallint)
		WHERE tenant = $1 AND name = $2 RETURNING `+queueColumns,
		pgtype.UUID{Bytes: tenant, Valid: true}, name, int16(id))
	if errors.Is(err, pgx.ErrNoRows) {
		return storage.Queue{}, false, nil
	}
	if err != nil {
		return q, false, fmt.Errorf("pgwire: record key id %d of queue %q: %w", id, name, err)
	}
	return q, true, nil
}
