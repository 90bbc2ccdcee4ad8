package pgwire

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// publishSQL is the publish surface (queen.publish and the publication the
// relay reads through), run in every database the relay watches.
var publishSQL = statement("publish_surface")

// PublicationName is the (empty) publication pgoutput is started with.
const PublicationName = "queen_publish"

// MessagePrefix is the prefix of the logical messages queen.publish writes.
const MessagePrefix = "queen"

// ErrSlotBusy is OpenSlot's answer when another reader streams the slot:
// the slot's single active reader is the lock on it.
var ErrSlotBusy = errors.New("pgwire: the replication slot is read by another connection")

// ErrNotReady wraps what a database lacks for the relay (Readiness).
var ErrNotReady = errors.New("pgwire: the database is not ready for the publish relay")

// SlotName is the default replication slot of a watched database: the
// prefix and the database's name, cut to what a slot name may hold
// (lower-case letters, digits, underscores; 63 bytes).
func SlotName(database string) string {
	name := "queen_publish_" + slotUnsafe.ReplaceAllString(strings.ToLower(database), "_")
	if len(name) > 63 {
		name = name[:63]
	}
	return name
}

var slotUnsafe = regexp.MustCompile(`[^a-z0-9_]`)

// Readiness lists what the database behind dsn lacks for the publish relay,
// one short phrase each (empty: nothing): wal_level logical, a free
// replication slot and WAL sender, the REPLICATION attribute of the
// connecting role. It also returns the database's name.
func Readiness(ctx context.Context, dsn string) (database string, missing []string, err error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", nil, fmt.Errorf("pgwire: publish readiness: connect: %w", err)
	}
	defer conn.Close(context.Background())
	var walLevel string
	var slots, used, senders int
	var replication bool
	err = conn.QueryRow(ctx, `SELECT current_database(), current_setting('wal_level'),
			current_setting('max_replication_slots')::int, (SELECT count(*) FROM pg_replication_slots)::int,
			current_setting('max_wal_senders')::int,
			(SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user)`).
		Scan(&database, &walLevel, &slots, &used, &senders, &replication)
	if err != nil {
		return "", nil, fmt.Errorf("pgwire: publish readiness: %w", err)
	}
	if walLevel != "logical" {
		missing = append(missing, "wal_level=logical (it is "+walLevel+")")
	}
	if slots == 0 {
		missing = append(missing, "max_replication_slots > 0")
	} else if used >= slots {
		// The slot may be one of those in use already: the relay's own.
		var ours bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = $1)`,
			SlotName(database)).Scan(&ours); err != nil {
			return "", nil, fmt.Errorf("pgwire: publish readiness: %w", err)
		}
		if !ours {
			missing = append(missing, fmt.Sprintf("a free replication slot (max_replication_slots=%d, all in use)", slots))
		}
	}
	if senders == 0 {
		missing = append(missing, "max_wal_senders > 0")
	}
	if !replication {
		missing = append(missing, "the REPLICATION attribute for the bridge's role (ALTER ROLE ... REPLICATION)")
	}
	return database, missing, nil
}

// SlotState is a slot as pg_replication_slots shows it.
type SlotState struct {
	Exists  bool
	Active  bool
	LagByte int64 // pg_current_wal_lsn() - confirmed_flush_lsn
}

// ReadSlotState reads slot's state in the database behind dsn (for the
// bridges that do not hold it: a slot nobody reads holds WAL).
func ReadSlotState(ctx context.Context, dsn, slot string) (SlotState, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return SlotState{}, fmt.Errorf("pgwire: slot state: connect: %w", err)
	}
	defer conn.Close(context.Background())
	var s SlotState
	err = conn.QueryRow(ctx, `SELECT active, coalesce(pg_current_wal_lsn() - confirmed_flush_lsn, 0)::bigint
		FROM pg_replication_slots WHERE slot_name = $1`, slot).Scan(&s.Active, &s.LagByte)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("pgwire: slot state: %w", err)
	}
	s.Exists = true
	return s, nil
}

// RelayPosition is the stored position of a relay's slot (0: none).
// key is the source's system identifier, '/', the slot's name.
func (db *DB) RelayPosition(ctx context.Context, key string) (uint64, error) {
	var lsn int64
	err := db.pool.QueryRow(ctx, `SELECT lsn FROM queen.publish_positions WHERE slot = $1`, key).Scan(&lsn)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("pgwire: relay position %s: %w", key, err)
	}
	return uint64(lsn), nil
}

// SaveRelayPosition stores a relay's position; it never moves back.
func (db *DB) SaveRelayPosition(ctx context.Context, key string, lsn uint64) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO queen.publish_positions AS p (slot, lsn) VALUES ($1, $2)
		ON CONFLICT (slot) DO UPDATE SET lsn = greatest(p.lsn, excluded.lsn), updated_at = now()`, key, int64(lsn))
	if err != nil {
		return fmt.Errorf("pgwire: save relay position %s: %w", key, err)
	}
	return nil
}

// RelayMark is one partition's publish relay mark (queen.publish_marks):
// the place of the last message of the slot stored there.
type RelayMark struct {
	Queue, Partition string
	LSN              uint64
	Index            int32
}

// RelayMarks reads every partition's mark of the relay's slot key (the
// source's system identifier, '/', the slot's name). The relay pushes for
// the default tenant only, so a queue's name names its partition.
func (db *DB) RelayMarks(ctx context.Context, key string) ([]RelayMark, error) {
	rows, err := db.pool.Query(ctx, `SELECT q.name, p.name, k.lsn, k.idx FROM queen.publish_marks k
		JOIN queen.log_partitions p ON p.id = k.partition_id JOIN queen.queues q ON q.id = p.queue_id
		WHERE k.slot = $1`, key)
	if err != nil {
		return nil, fmt.Errorf("pgwire: relay marks %s: %w", key, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RelayMark, error) {
		var m RelayMark
		var lsn int64
		err := r.Scan(&m.Queue, &m.Partition, &lsn, &m.Index)
		m.LSN = uint64(lsn)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgwire: relay marks %s: %w", key, err)
	}
	return out, nil
}

// isObjectInUse says err is PostgreSQL's 55006 (a slot active for another
// process).
func isObjectInUse(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "55006"
}

// isDuplicateObject says err is PostgreSQL's 42710 (the slot exists).
func isDuplicateObject(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42710"
}

// DatabaseOf is the database a DSN names (the user's name when it names
// none, as libpq does).
func DatabaseOf(dsn string) (string, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "", fmt.Errorf("pgwire: parse DSN: %w", err)
	}
	if cfg.Database != "" {
		return cfg.Database, nil
	}
	return cfg.User, nil
}

// LSNText is a WAL position as PostgreSQL writes it (16/B374D848).
func LSNText(lsn uint64) string { return pglogrepl.LSN(lsn).String() }
