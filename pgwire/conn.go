package pgwire

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Every statement the bridge sends runs inside withConn (or queryRow, which
// is withConn around one row), so that it is bounded twice: by
// AcquireTimeout while it waits for a connection, and by StatementTimeout
// while it runs. The one exception is Migrate (pgwire/schema/migrate.go): a migration may
// run long and waits for other bridges' migrations; its caller bounds it.

// withConn runs fn on a pooled connection with the acquire and statement
// timeouts applied. A statement that times out has already had its cancel
// request sent (the context watcher does that when the context ends); its
// connection is then closed, so the pool destroys it instead of handing out
// a connection whose last statement may still be unwinding.
//
// It is also where a call is run again when PostgreSQL asked for that
// (retry.go): fn failed with 40P01 or 40001, or its connection was lost
// before the statement was sent, and nothing fn sent had committed (the
// tracer saw no statement succeed outside a transaction block, and no
// transaction is left open: a failed statement in an implicit transaction
// rolled it back; a call in an explicit one rolled the whole of it back, and
// the whole of it runs again). fn must therefore be safe to run again: it
// sets its results anew on each run, it does not add to them.
func (db *DB) withConn(ctx context.Context, fn func(context.Context, *pgxpool.Conn) error) error {
	var err error
	for try := 1; ; try++ {
		var c *callCtx
		c, err = db.try(ctx, fn)
		if err == nil || try == retryAttempts || c == nil || c.effect || !retryable(err) || ctx.Err() != nil {
			return err
		}
		db.retries.add(statementName(c.last))
		t := time.NewTimer(retryBackoff << (try - 1))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// try is one run of fn for withConn. It answers the call's context (nil
// when no connection could be had) and fn's error.
func (db *DB) try(ctx context.Context, fn func(context.Context, *pgxpool.Conn) error) (*callCtx, error) {
	conn, err := db.acquire(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	qctx, cancel := context.WithTimeout(ctx, db.cfg.StatementTimeout)
	c := &callCtx{Context: qctx}
	err = fn(c, conn)
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
		c.effect = true // cancelled mid-way: its outcome is not known
	} else if err != nil && conn.Conn().PgConn().TxStatus() != 'I' {
		// fn left a transaction open (or the connection is gone): what it
		// did is not known to be undone.
		c.effect = true
	}
	conn.Release()
	return c, err
}

// queryRow runs one statement that answers one row under withConn, and
// hands the row to scan.
func (db *DB) queryRow(ctx context.Context, scan func(pgx.Row) error, sql string, args ...any) error {
	return db.withConn(ctx, func(ctx context.Context, conn *pgxpool.Conn) error {
		return scan(conn.QueryRow(ctx, sql, args...))
	})
}

// acquire takes a pooled connection within AcquireTimeout. With one idle
// (the usual case) it is handed over at once, and no timeout context is
// made for the wait that will not happen: on a lone push, making and
// cancelling that context was 2 % of the bridge's CPU. (Should another
// caller take that connection first, this one waits within ctx's own
// deadline; the timeout is for a database that cannot be reached, where
// no connection is idle.)
func (db *DB) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	if db.pool.Stat().IdleConns() > 0 {
		if conn, err := db.pool.Acquire(ctx); err == nil || ctx.Err() != nil {
			return conn, err
		}
	}
	actx, cancel := context.WithTimeout(ctx, db.cfg.AcquireTimeout)
	defer cancel()
	return db.pool.Acquire(actx)
}
