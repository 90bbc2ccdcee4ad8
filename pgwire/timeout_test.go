package pgwire_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

// A partition row locked by another session makes the bundle call run into
// the statement timeout: the call fails with ErrStatementTimeout, the server
// stops running it (cancel request), the connection is destroyed, and the
// counters say so.
func TestStatementTimeoutCancelsAndQuarantines(t *testing.T) {
	t.Parallel()
	dsn := newDBDSN(t)
	ctx := context.Background()
	db, err := pgwire.Open(ctx, pgwire.Config{DSN: dsn, MaxConns: 4, StatementTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	push(t, db, write("q", "p", "a"))

	release := testkit.LockPartition(t, dsn, "p")
	_, err = db.PushBundle(ctx, []segment.Write{write("q", "p", "b")})
	if !pgwire.IsTimeout(err) || !errors.Is(err, pgwire.ErrStatementTimeout) {
		t.Fatalf("want a statement timeout, got %v", err)
	}
	if st := db.Stats(); st.StatementTimeouts != 1 || st.QuarantinedConnection != 1 {
		t.Fatalf("stats %+v", st)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var running int
		// a connection of its own: inside the locker's transaction the
		// statistics snapshot stays frozen
		if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE query LIKE '%log_push_multi_v1%' AND state = 'active' AND pid <> pg_backend_pid()`).Scan(&running); err != nil {
			t.Fatal(err)
		}
		if running == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d backends still run the cancelled statement", running)
		}
		time.Sleep(20 * time.Millisecond)
	}
	release()
	if r := push(t, db, write("q", "p", "b"))[0]; r.Status != segment.Queued || r.BaseOffset != 2 {
		t.Fatalf("after the lock is released: %+v", r)
	}
}

func TestMaintenanceFlagRoundTrip(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	for _, want := range []bool{false, true, false} {
		if err := db.SetMaintenance(ctx, want); err != nil {
			t.Fatal(err)
		}
		if got, err := db.Maintenance(ctx); err != nil || got != want {
			t.Fatalf("maintenance %v (%v), want %v", got, err, want)
		}
	}
}

func TestUnreachableDatabaseIsUnavailable(t *testing.T) {
	t.Parallel()
	db, err := pgwire.Open(context.Background(), pgwire.Config{DSN: "postgres://postgres@127.0.0.1:1/none?sslmode=disable", AcquireTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.PushBundle(context.Background(), []segment.Write{write("q", "p", "a")})
	if !pgwire.IsUnavailable(err) {
		t.Fatalf("want ErrUnavailable, got %v", err)
	}
}
