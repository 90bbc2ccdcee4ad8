package pgwire

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// Slot is one logical replication connection streaming a slot of the
// publish relay through pgoutput with messages on: it hands out each
// committed transaction's queen messages, in commit order, and reports
// back the position the relay confirmed.
//
// One goroutine owns the connection: the one that calls Next (it also
// answers the server's keepalives and sends the status updates there).
// Confirm may be called from any goroutine; the confirmed position is an
// atomic that Next reads.
type Slot struct {
	conn     *pgconn.PgConn
	name     string
	systemID string

	confirmed atomic.Uint64 // the relay's confirmed position: any goroutine stores (max), Next reports it
	serverEnd atomic.Uint64 // the server's WAL end as last heard, for the lag

	// Owned by the goroutine calling Next.
	handed     uint64 // end of the last transaction Next returned
	sent       uint64 // the position last reported to the server
	nextStatus time.Time
	cur        *Txn // the transaction being received
}

// Txn is one committed transaction's queen messages, in call order.
type Txn struct {
	CommitLSN  uint64 // the commit record's position: names the transaction in the WAL
	EndLSN     uint64 // the end of the transaction: the position to confirm once it is stored
	CommitTime time.Time
	Messages   [][]byte // the messages' contents (copies)
}

// statusInterval is how often Next reports the confirmed position even when
// nothing changed; the server's wal_sender_timeout (60 s by default) must be
// well above it.
const statusInterval = 10 * time.Second

// OpenSlot connects to the database behind dsn for logical replication,
// creates the slot when missing, installs the publish surface there
// (sql/publish_surface.sql: queen.publish and the publication) and starts
// streaming the slot
// from the position start returns for the source cluster's system
// identifier (0: from the slot's own confirmed position). A slot that
// another connection streams answers ErrSlotBusy.
func OpenSlot(ctx context.Context, dsn, slot string, start func(systemID string) (uint64, error)) (*Slot, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("pgwire: slot %s: parse DSN: %w", slot, err)
	}
	cfg.RuntimeParams["replication"] = "database"
	cfg.RuntimeParams["application_name"] = "queen-bridge publish"
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = connectTimeout
	}
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgwire: slot %s: connect: %w", slot, err)
	}
	s := &Slot{conn: conn, name: slot}
	if err := s.open(ctx, start); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return s, nil
}

func (s *Slot) open(ctx context.Context, startAt func(string) (uint64, error)) error {
	sys, err := pglogrepl.IdentifySystem(ctx, s.conn)
	if err != nil {
		return fmt.Errorf("pgwire: slot %s: identify system: %w", s.name, err)
	}
	s.systemID = sys.SystemID
	start, err := startAt(s.systemID)
	if err != nil {
		return err
	}
	// The publication before the slot: pgoutput looks it up for every
	// change it decodes, in the catalog as it stood at that change, and
	// a change committed after the slot's start while the publication did
	// not exist yet fails the stream (before PostgreSQL 18), again at each
	// start from there.
	if _, err := s.conn.Exec(ctx, ensurePublicationSQL).ReadAll(); err != nil {
		return fmt.Errorf("pgwire: slot %s: create publication %s: %w", s.name, PublicationName, err)
	}
	// The slot before the function: a message is decoded only when its
	// transaction commits after the slot's consistent point, so while
	// queen.publish exists a slot must already, or a message published in
	// between would be lost. (Creating the slot waits for the transactions
	// running then to end; none of them can have called a function that did
	// not exist yet.)
	_, err = pglogrepl.CreateReplicationSlot(ctx, s.conn, s.name, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication})
	if err != nil && !isDuplicateObject(err) {
		return fmt.Errorf("pgwire: slot %s: create: %w", s.name, err)
	}
	if err := s.install(ctx); err != nil {
		return err
	}
	err = pglogrepl.StartReplication(ctx, s.conn, s.name, pglogrepl.LSN(start), pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '1'", "publication_names '" + PublicationName + "'", "messages 'true'"},
	})
	if isObjectInUse(err) {
		return fmt.Errorf("%w: %s (%v)", ErrSlotBusy, s.name, err)
	}
	if err != nil {
		return fmt.Errorf("pgwire: slot %s: start replication: %w", s.name, err)
	}
	s.confirmed.Store(start)
	s.sent = start
	s.nextStatus = time.Now().Add(statusInterval)
	return nil
}

// ensurePublicationSQL makes the empty publication pgoutput requires
// unless it exists (publish_surface.sql makes it too, for a database
// prepared by hand).
const ensurePublicationSQL = `DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = '` + PublicationName + `') THEN
        CREATE PUBLICATION ` + PublicationName + `;
    END IF;
END
$$`

// install runs the publish surface's file unless the database has this
// very text already: its SHA-256 is the function's comment. So the bridges
// that wait for the slot, trying every second, change no catalog.
func (s *Slot) install(ctx context.Context) error {
	sum := sha256.Sum256([]byte(publishSQL))
	mark := "queen publish surface sha256:" + hex.EncodeToString(sum[:])
	res := s.conn.Exec(ctx, `SELECT coalesce(obj_description(to_regprocedure('queen.publish(text,text,jsonb,text,text)'), 'pg_proc'), '')
		|| CASE WHEN EXISTS (SELECT 1 FROM pg_publication WHERE pubname = '`+PublicationName+`') THEN '' ELSE ' (no publication)' END`)
	rs, err := res.ReadAll()
	if err != nil {
		return fmt.Errorf("pgwire: slot %s: look up queen.publish: %w", s.name, err)
	}
	if len(rs) == 1 && len(rs[0].Rows) == 1 && string(rs[0].Rows[0][0]) == mark {
		return nil
	}
	if _, err := s.conn.Exec(ctx, publishSQL+";\nCOMMENT ON FUNCTION queen.publish(text, text, jsonb, text, text) IS '"+mark+"'").ReadAll(); err != nil {
		return fmt.Errorf("pgwire: slot %s: install queen.publish: %w", s.name, err)
	}
	return nil
}

// SystemID is the source cluster's system identifier.
func (s *Slot) SystemID() string { return s.systemID }

// Confirm records that everything up to lsn is stored: the next status
// update tells the server, which may then recycle the WAL before it. It
// never moves back.
func (s *Slot) Confirm(lsn uint64) {
	for {
		old := s.confirmed.Load()
		if lsn <= old || s.confirmed.CompareAndSwap(old, lsn) {
			return
		}
	}
}

// Confirmed is the position last confirmed.
func (s *Slot) Confirmed() uint64 { return s.confirmed.Load() }

// ServerEnd is the server's WAL end as last heard (keepalives, data).
func (s *Slot) ServerEnd() uint64 { return s.serverEnd.Load() }

// Next returns the next committed transaction that holds queen messages,
// waiting for it. Meanwhile it answers keepalives and reports the
// confirmed position at least every second while it changes. When the
// relay has confirmed everything Next handed out, a keepalive's WAL end
// is confirmed too: nothing before it holds a message still to relay,
// so the slot does not hold WAL while the database writes other things.
func (s *Slot) Next(ctx context.Context) (Txn, error) {
	for {
		if err := s.report(ctx); err != nil {
			return Txn{}, err
		}
		wait := min(time.Until(s.nextStatus), time.Second)
		rctx, cancel := context.WithTimeout(ctx, wait)
		raw, err := s.conn.ReceiveMessage(rctx)
		cancel()
		if err != nil {
			if pgconn.Timeout(err) && ctx.Err() == nil {
				continue
			}
			return Txn{}, fmt.Errorf("pgwire: slot %s: receive: %w", s.name, err)
		}
		switch m := raw.(type) {
		case *pgproto3.ErrorResponse:
			err := pgconn.ErrorResponseToPgError(m)
			if err.Code == "42704" && strings.Contains(err.Message, "publication") {
				return Txn{}, fmt.Errorf("pgwire: slot %s is older than publication %s, and a change committed between the two cannot be decoded; "+
					"docs/publish.md (\"A slot older than its publication\") says how to move the slot past it: %w", s.name, PublicationName, err)
			}
			return Txn{}, fmt.Errorf("pgwire: slot %s: %w", s.name, err)
		case *pgproto3.CopyData:
			txn, done, err := s.copyData(m.Data)
			if err != nil || done {
				return txn, err
			}
		}
	}
}

// copyData takes one CopyData message of the stream; done when it ends a
// transaction that holds queen messages.
func (s *Slot) copyData(data []byte) (Txn, bool, error) {
	if len(data) == 0 {
		return Txn{}, false, nil
	}
	switch data[0] {
	case pglogrepl.PrimaryKeepaliveMessageByteID:
		k, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
		if err != nil {
			return Txn{}, false, fmt.Errorf("pgwire: slot %s: keepalive: %w", s.name, err)
		}
		s.noteEnd(uint64(k.ServerWALEnd))
		if s.cur == nil && s.confirmed.Load() >= s.handed {
			s.Confirm(uint64(k.ServerWALEnd))
		}
		if k.ReplyRequested {
			s.nextStatus = time.Time{}
		}
	case pglogrepl.XLogDataByteID:
		x, err := pglogrepl.ParseXLogData(data[1:])
		if err != nil {
			return Txn{}, false, fmt.Errorf("pgwire: slot %s: xlog data: %w", s.name, err)
		}
		s.noteEnd(uint64(x.ServerWALEnd))
		return s.logical(x.WALData)
	}
	return Txn{}, false, nil
}

// logical takes one pgoutput message.
func (s *Slot) logical(data []byte) (Txn, bool, error) {
	msg, err := pglogrepl.Parse(data)
	if err != nil {
		return Txn{}, false, fmt.Errorf("pgwire: slot %s: decode pgoutput: %w", s.name, err)
	}
	switch m := msg.(type) {
	case *pglogrepl.BeginMessage:
		s.cur = &Txn{CommitTime: m.CommitTime}
	case *pglogrepl.LogicalDecodingMessage:
		if s.cur != nil && m.Transactional && m.Prefix == MessagePrefix {
			s.cur.Messages = append(s.cur.Messages, append([]byte(nil), m.Content...))
		}
	case *pglogrepl.CommitMessage:
		t := s.cur
		s.cur = nil
		if t == nil || len(t.Messages) == 0 {
			return Txn{}, false, nil
		}
		t.CommitLSN, t.EndLSN, t.CommitTime = uint64(m.CommitLSN), uint64(m.TransactionEndLSN), m.CommitTime
		s.handed = t.EndLSN
		return *t, true, nil
	}
	return Txn{}, false, nil
}

func (s *Slot) noteEnd(lsn uint64) {
	if lsn > s.serverEnd.Load() {
		s.serverEnd.Store(lsn) // only Next's goroutine stores
	}
}

// report sends a status update when the confirmed position moved, the
// server asked for one, or statusInterval passed.
func (s *Slot) report(ctx context.Context) error {
	c := s.confirmed.Load()
	now := time.Now()
	if c == s.sent && now.Before(s.nextStatus) {
		return nil
	}
	err := pglogrepl.SendStandbyStatusUpdate(ctx, s.conn, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: pglogrepl.LSN(c), WALFlushPosition: pglogrepl.LSN(c), WALApplyPosition: pglogrepl.LSN(c), ClientTime: now,
	})
	if err != nil {
		return fmt.Errorf("pgwire: slot %s: status update: %w", s.name, err)
	}
	s.sent = c
	s.nextStatus = now.Add(statusInterval)
	return nil
}

// Close reports the confirmed position a last time and closes the
// connection (the slot stays, for the next reader). A connection that
// already failed is not written to: pgx closes it on its own goroutine.
func (s *Slot) Close(ctx context.Context) error {
	if s.conn.IsClosed() {
		return nil
	}
	err := s.report(ctx)
	if cerr := s.conn.Close(ctx); cerr != nil && !errors.Is(cerr, context.Canceled) {
		err = errors.Join(err, cerr)
	}
	return err
}
