package pgwire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// JetStream deliver policies (JSStart.Policy), as JetStream spells them.
const (
	JSDeliverAll             = "all"
	JSDeliverNew             = "new"
	JSDeliverByStartTime     = "by_start_time"
	JSDeliverLast            = "last"
	JSDeliverLastPerSubject  = "last_per_subject"
	JSDeliverByStartSequence = "by_start_sequence"
)

// PutConsumer actions, as JetStream's consumer create request names them.
const (
	JSActionCreateOrUpdate = ""
	JSActionCreate         = "create"
	JSActionUpdate         = "update"
)

// JSStart is where a JetStream consumer's cursors start, by its deliver
// policy: what PutConsumer seeds them by when it creates the consumer
// (jetstream_consumer_put_v1 has the rule per policy).
type JSStart struct {
	// Policy is one of the JSDeliver constants. Required.
	Policy string
	// Time: by_start_time's time.
	Time time.Time
	// PartitionID and Offset: by_start_sequence's partition (the one its
	// filter pins) and the first offset to deliver on it (>= 1).
	PartitionID int64
	Offset      int64
}

// JSConsumer is a JetStream consumer's definition (queen.jetstream_consumers).
// Its name is its consumer group: its floor on a partition is that group's
// cursor.
type JSConsumer struct {
	ID      int64 // set by PutConsumer
	Tenant  tenancy.TenantID
	Queue   string
	Name    string
	Durable bool
	// Config is the engine's encoding of the configuration, a JSON object,
	// stored as jsonb: answered as PostgreSQL normalises it (key order
	// and spacing may differ from what was put), and compared so.
	Config []byte
	Start  JSStart
	// CreatedAt and LastActiveAt are set by the database; TouchConsumers
	// moves LastActiveAt.
	CreatedAt, LastActiveAt time.Time
}

// validate checks what PutConsumer needs of c before anything is written.
func (c *JSConsumer) validate(action string) error {
	switch action {
	case JSActionCreateOrUpdate, JSActionCreate, JSActionUpdate:
	default:
		return fmt.Errorf("pgwire: consumer action %q: must be %q, %q or %q", action, JSActionCreate, JSActionUpdate, JSActionCreateOrUpdate)
	}
	switch {
	case len(c.Queue) == 0 || len(c.Queue) > 255:
		return fmt.Errorf("pgwire: consumer queue name must be 1 to 255 bytes, got %d", len(c.Queue))
	case len(c.Name) == 0 || len(c.Name) > 255:
		return fmt.Errorf("pgwire: consumer name must be 1 to 255 bytes, got %d", len(c.Name))
	case c.Name == QueueMode:
		return fmt.Errorf("pgwire: consumer name %q is the queue mode's group", c.Name)
	case !json.Valid(c.Config) || !bytes.HasPrefix(bytes.TrimSpace(c.Config), []byte("{")):
		return fmt.Errorf("pgwire: consumer %q: config must be a JSON object, got %q", c.Name, c.Config)
	}
	switch c.Start.Policy {
	case JSDeliverAll, JSDeliverNew, JSDeliverLast, JSDeliverLastPerSubject:
	case JSDeliverByStartTime:
		if c.Start.Time.IsZero() {
			return fmt.Errorf("pgwire: consumer %q: deliver policy %s needs a start time", c.Name, c.Start.Policy)
		}
	case JSDeliverByStartSequence:
		if c.Start.PartitionID <= 0 || c.Start.Offset < 1 {
			return fmt.Errorf("pgwire: consumer %q: deliver policy %s needs a partition id and a first offset >= 1, got %d and %d",
				c.Name, c.Start.Policy, c.Start.PartitionID, c.Start.Offset)
		}
	default:
		return fmt.Errorf("pgwire: consumer %q: unknown deliver policy %q", c.Name, c.Start.Policy)
	}
	return nil
}

// PutConsumer creates or updates a JetStream consumer of a tenant's queue
// (jetstream_consumer_put_v1, one transaction): action JSActionCreate
// fails with ErrConsumerExists when the consumer exists with another
// config (with the same config it answers it as it is), JSActionUpdate
// with ErrConsumerMissing when none exists, JSActionCreateOrUpdate does
// either. An update changes Config alone. A created consumer's cursors
// are seeded by c.Start on the partitions the queue has, and its
// subscription seeds those made later; a queue not made yet is made, as a
// push makes it. It answers the stored definition.
func (db *DB) PutConsumer(ctx context.Context, c JSConsumer, action string) (JSConsumer, error) {
	if err := c.validate(action); err != nil {
		return JSConsumer{}, err
	}
	var status string
	out := JSConsumer{Tenant: c.Tenant, Queue: c.Queue, Name: c.Name}
	var id, pid, off pgtype.Int8
	var durable pgtype.Bool
	var policy pgtype.Text
	var start, created, active pgtype.Timestamptz
	err := db.queryRow(ctx, func(r pgx.Row) error {
		return r.Scan(&status, &id, &durable, &out.Config, &policy, &start, &pid, &off, &created, &active)
	}, `SELECT o_status, o_id, o_durable, o_config, o_policy, o_start_time, o_start_pid, o_start_offset, o_created_at, o_last_active_at
		FROM queen.jetstream_consumer_put_v1($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		tenantArg(c.Tenant), c.Queue, c.Name, c.Durable, string(c.Config), action, c.Start.Policy,
		pgtype.Timestamptz{Time: c.Start.Time, Valid: !c.Start.Time.IsZero()},
		pgtype.Int8{Int64: c.Start.PartitionID, Valid: c.Start.Policy == JSDeliverByStartSequence},
		pgtype.Int8{Int64: c.Start.Offset, Valid: c.Start.Policy == JSDeliverByStartSequence})
	if err != nil {
		return JSConsumer{}, fmt.Errorf("pgwire: put consumer %q of %s: %w", c.Name, c.Queue, err)
	}
	switch status {
	case "exists":
		return JSConsumer{}, fmt.Errorf("pgwire: create consumer %q of %s: %w", c.Name, c.Queue, ErrConsumerExists)
	case "missing":
		return JSConsumer{}, fmt.Errorf("pgwire: update consumer %q of %s: %w", c.Name, c.Queue, ErrConsumerMissing)
	case "no_partition":
		return JSConsumer{}, fmt.Errorf("pgwire: create consumer %q of %s: deliver policy %s names partition %d, which the queue does not have",
			c.Name, c.Queue, c.Start.Policy, c.Start.PartitionID)
	}
	out.ID, out.Durable = id.Int64, durable.Bool
	out.Start = JSStart{Policy: policy.String, Time: start.Time, PartitionID: pid.Int64, Offset: off.Int64}
	out.CreatedAt, out.LastActiveAt = created.Time, active.Time
	return out, nil
}

// jsConsumerColumns are the columns scanConsumer reads, of
// queen.jetstream_consumers j.
const jsConsumerColumns = `j.id, j.name, j.durable, j.config, j.deliver_policy, j.start_time, j.start_partition_id, j.start_offset,
	j.created_at, j.last_active_at`

// scanConsumer reads a row of jsConsumerColumns into c, after the columns
// before it into lead.
func scanConsumer(r pgx.Row, c *JSConsumer, lead ...any) error {
	var start pgtype.Timestamptz
	var pid, off pgtype.Int8
	if err := r.Scan(append(lead, &c.ID, &c.Name, &c.Durable, &c.Config, &c.Start.Policy, &start, &pid, &off, &c.CreatedAt, &c.LastActiveAt)...); err != nil {
		return err
	}
	c.Start.Time, c.Start.PartitionID, c.Start.Offset = start.Time, pid.Int64, off.Int64
	return nil
}

// GetConsumer reads a JetStream consumer of a tenant's queue, or
// ErrConsumerMissing.
func (db *DB) GetConsumer(ctx context.Context, tenant tenancy.TenantID, queue, name string) (JSConsumer, error) {
	c := JSConsumer{Tenant: tenant, Queue: queue}
	err := db.queryRow(ctx, func(r pgx.Row) error { return scanConsumer(r, &c) },
		`/* queen:js-consumer-get */ SELECT `+jsConsumerColumns+`
		FROM queen.queues q JOIN queen.jetstream_consumers j ON j.queue_id = q.id
		WHERE q.tenant = $1 AND q.name = $2 AND j.name = $3`, tenantArg(tenant), queue, name)
	if errors.Is(err, pgx.ErrNoRows) {
		return JSConsumer{}, fmt.Errorf("pgwire: consumer %q of %s: %w", name, queue, ErrConsumerMissing)
	}
	if err != nil {
		return JSConsumer{}, fmt.Errorf("pgwire: consumer %q of %s: %w", name, queue, err)
	}
	return c, nil
}

// ListConsumers reads the JetStream consumers of a tenant's queue, by name.
// None (also for a queue that does not exist): empty.
func (db *DB) ListConsumers(ctx context.Context, tenant tenancy.TenantID, queue string) ([]JSConsumer, error) {
	var out []JSConsumer
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		out = out[:0] // a retry runs this again (withConn)
		rows, err := conn.Query(ctx, `/* queen:js-consumer-list */ SELECT `+jsConsumerColumns+`
			FROM queen.queues q JOIN queen.jetstream_consumers j ON j.queue_id = q.id
			WHERE q.tenant = $1 AND q.name = $2 ORDER BY j.name`, tenantArg(tenant), queue)
		if err != nil {
			return err
		}
		out, err = pgx.AppendRows(out, rows, func(r pgx.CollectableRow) (JSConsumer, error) {
			c := JSConsumer{Tenant: tenant, Queue: queue}
			return c, scanConsumer(r, &c)
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgwire: consumers of %s: %w", queue, err)
	}
	return out, nil
}

// IdleConsumers lists up to limit JetStream consumers of every tenant
// that may be deleted for inactivity and whose activity was last recorded
// longer ago than their threshold plus grace: the ephemeral ones, and the
// durable ones whose Config holds a number above zero at thresholdKey (the
// threshold in nanoseconds, in the engine's encoding). Longest idle first.
func (db *DB) IdleConsumers(ctx context.Context, grace time.Duration, thresholdKey string, limit int) ([]JSConsumer, error) {
	var out []JSConsumer
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		out = out[:0] // a retry runs this again (withConn)
		rows, err := conn.Query(ctx, `/* queen:js-consumer-idle */ SELECT q.tenant, q.name, `+jsConsumerColumns+`
			FROM queen.jetstream_consumers j JOIN queen.queues q ON q.id = j.queue_id,
				LATERAL (SELECT greatest(coalesce((j.config->>$2)::numeric, 0), 0) AS ns) t
			WHERE (NOT j.durable OR t.ns > 0)
			  AND j.last_active_at < clock_timestamp() - make_interval(secs => t.ns / 1e9) - $1::interval
			ORDER BY j.last_active_at, j.id LIMIT $3`, grace, thresholdKey, limit)
		if err != nil {
			return err
		}
		out, err = pgx.AppendRows(out, rows, func(r pgx.CollectableRow) (JSConsumer, error) {
			var c JSConsumer
			var t pgtype.UUID
			err := scanConsumer(r, &c, &t, &c.Queue)
			c.Tenant = tenancy.TenantID(t.Bytes)
			return c, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgwire: idle consumers: %w", err)
	}
	return out, nil
}

// deleteConsumerSQL removes a JetStream consumer of a tenant's queue: its
// definition, its cursor rows (with the acknowledgement state on them) and
// its subscription, in one statement. Its dead letters stay (the queue's,
// listed and requeued by the admin routes). Locks: the definition, then the
// cursor rows in ascending (partition, group) (locked over the sorted rows),
// the one order; no partition row is locked.
var deleteConsumerSQL = statement("js_delete_consumer")

// DeleteConsumer removes a JetStream consumer of a tenant's queue, with its
// cursor rows and subscription (deleteConsumerSQL); false when there was
// none.
func (db *DB) DeleteConsumer(ctx context.Context, tenant tenancy.TenantID, queue, name string) (bool, error) {
	var n int64
	err := db.queryRow(ctx, func(r pgx.Row) error { return r.Scan(&n) }, deleteConsumerSQL, tenantArg(tenant), queue, name)
	if err != nil {
		return false, fmt.Errorf("pgwire: delete consumer %q of %s: %w", name, queue, err)
	}
	return n > 0, nil
}

// TouchConsumers moves the last-active time of JetStream consumers to now
// (inactive_threshold counts from it). The rows are locked in ascending id;
// ids of consumers that are gone are skipped.
func (db *DB) TouchConsumers(ctx context.Context, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		_, err := conn.Exec(ctx, `/* queen:js-consumer-touch */ UPDATE queen.jetstream_consumers j SET last_active_at = clock_timestamp()
			FROM (SELECT x.id FROM queen.jetstream_consumers x WHERE x.id = ANY ($1::int8[]) ORDER BY x.id FOR NO KEY UPDATE) l
			WHERE j.id = l.id`, ids)
		return err
	})
	if err != nil {
		return fmt.Errorf("pgwire: touch %d consumers: %w", len(ids), err)
	}
	return nil
}
