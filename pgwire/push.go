package pgwire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/segment"
)

// pushSQL is prepared once per connection and cached by pgx (its default
// statement-cache mode), so the hot path sends only Bind/Execute.
const pushSQL = `SELECT queen.log_push_multi_v1($1::text[], $2::text[], $3::int4[], $4::bytea[], $5::int8[], $6::bytea[], $7::uuid[], $8::int4[])`

// bundleArgs are the typed parallel arrays of one call.
type bundleArgs struct {
	queues, partitions []string
	counts             []int32
	hashes, blobs      [][]byte
	verified           []int64
	tenants            []pgtype.UUID // nil: every segment is the default tenant
	minWindows         []int32       // nil: no segment widens its probe
}

func newBundleArgs(writes []segment.Write) *bundleArgs {
	n := len(writes)
	a := &bundleArgs{
		queues: make([]string, n), partitions: make([]string, n), counts: make([]int32, n),
		hashes: make([][]byte, n), blobs: make([][]byte, n), verified: make([]int64, n),
	}
	for i := range writes {
		w := &writes[i]
		a.queues[i], a.partitions[i], a.counts[i] = w.Queue, w.Partition, w.Count
		a.hashes[i], a.blobs[i], a.verified[i] = w.Hashes, w.Blob, w.Verified
		if w.Tenant != ([16]byte{}) && a.tenants == nil {
			a.tenants = make([]pgtype.UUID, n)
			for j := range a.tenants {
				a.tenants[j] = pgtype.UUID{Bytes: writes[j].Tenant, Valid: true}
			}
		}
		if w.MinWindowSeconds != 0 && a.minWindows == nil {
			a.minWindows = make([]int32, n)
			for j := range a.minWindows {
				a.minWindows[j] = writes[j].MinWindowSeconds
			}
		}
	}
	return a
}

// wireResult is one element of log_push_multi_v1's answer.
type wireResult struct {
	PID  int64         `json:"pid"`
	Win  int32         `json:"win"`
	TS   time.Time     `json:"ts"`
	Base *int64        `json:"base"`
	Dups []segment.Dup `json:"dups"`
}

// PushBundle writes every segment of writes in one log_push_multi_v1
// transaction and returns one result per write, in input order.
func (db *DB) PushBundle(ctx context.Context, writes []segment.Write) ([]segment.Result, error) {
	if len(writes) == 0 {
		return nil, nil
	}
	a := newBundleArgs(writes)
	var raw []byte
	err := db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		return conn.QueryRow(ctx, pushSQL, a.queues, a.partitions, a.counts, a.hashes, a.verified, a.blobs, a.tenants, a.minWindows).Scan(&raw)
	})
	if err != nil {
		return nil, fmt.Errorf("pgwire: log_push_multi_v1 (%d segments): %w", len(writes), err)
	}
	return decodeResults(raw, len(writes))
}

// withConn runs fn on a pooled connection with the acquire and statement
// timeouts applied. A statement that times out has already had its cancel
// request sent (the context watcher does that when the context ends); its
// connection is then closed, so the pool destroys it instead of handing out
// a connection whose last statement may still be unwinding.
func (db *DB) withConn(ctx context.Context, fn func(context.Context, *pgxpool.Conn) error) error {
	actx, cancel := context.WithTimeout(ctx, db.cfg.AcquireTimeout)
	conn, err := db.pool.Acquire(actx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	qctx, cancel := context.WithTimeout(ctx, db.cfg.StatementTimeout)
	err = fn(qctx, conn)
	timedOut := err != nil && ctx.Err() == nil && errors.Is(qctx.Err(), context.DeadlineExceeded)
	cancel()
	if timedOut || (err != nil && ctx.Err() != nil) {
		if timedOut {
			db.timeouts.Add(1)
			err = fmt.Errorf("%w after %s: %v", ErrStatementTimeout, db.cfg.StatementTimeout, err)
		}
		db.quarantined.Add(1)
		closeCtx, cancelClose := context.WithTimeout(context.Background(), time.Second)
		_ = conn.Conn().Close(closeCtx)
		cancelClose()
	}
	conn.Release()
	return err
}

func decodeResults(raw []byte, n int) ([]segment.Result, error) {
	var wire []wireResult
	if err := json.Unmarshal(raw, &wire); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadResult, err)
	}
	if len(wire) != n {
		return nil, fmt.Errorf("%w: %d results for %d segments", ErrBadResult, len(wire), n)
	}
	out := make([]segment.Result, n)
	for i, w := range wire {
		r := segment.Result{PartitionID: w.PID, WindowSeconds: w.Win, CreatedAt: w.TS}
		switch {
		case w.Base != nil && len(w.Dups) == 0:
			r.Status, r.BaseOffset = segment.Queued, *w.Base
		case w.Base == nil && len(w.Dups) > 0:
			r.Status, r.Dups = segment.Duplicate, w.Dups
		default:
			return nil, fmt.Errorf("%w: result %d is neither queued nor duplicate", ErrBadResult, i)
		}
		out[i] = r
	}
	return out, nil
}

// SegmentAt returns the stored segment of partition pid that covers offset
// off, or ErrSegmentGone. A rare path (duplicate resolution): plain query.
func (db *DB) SegmentAt(ctx context.Context, pid, off int64) (segment.Stored, error) {
	s := segment.Stored{PartitionID: pid}
	rows, err := db.pool.Query(ctx, `SELECT base_offset, msg_count, created_at, payload FROM queen.log_segment_at_v1($1, $2)`, pid, off)
	if err != nil {
		return s, fmt.Errorf("pgwire: log_segment_at_v1(%d, %d): %w", pid, off, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return s, fmt.Errorf("pgwire: log_segment_at_v1(%d, %d): %w", pid, off, err)
		}
		return s, ErrSegmentGone
	}
	if err := rows.Scan(&s.BaseOffset, &s.Count, &s.CreatedAt, &s.Blob); err != nil {
		return s, fmt.Errorf("pgwire: log_segment_at_v1(%d, %d): %w", pid, off, err)
	}
	return s, rows.Err()
}
