package pgwire_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

// A partition row locked by another session makes the bundle statement run
// into the statement timeout, on either path (log_push_multi_v2, and the
// known-partition statement): the call fails with ErrStatementTimeout, the
// server stops running it (cancel request), the connection is destroyed,
// and the counters say so. The statement is first seen waiting for the
// lock, under pgwire.BundleTag, so that "gone" is about it.
func TestStatementTimeoutCancelsAndQuarantines(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"general", "known"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			dsn := newDBDSN(t)
			ctx := context.Background()
			// Long enough to see the statement waiting before it is
			// cancelled: this test does not time anything.
			db, err := pgwire.Open(ctx, pgwire.Config{DSN: dsn, MaxConns: 4, StatementTimeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			first := push(t, db, write("q", "p", "a"))[0]
			w := write("q", "p", "b")
			if path == "known" {
				w.PartitionID, w.QueueID, w.Verified = first.PartitionID, first.QueueID, first.BaseOffset
			}
			// a connection of its own: inside a transaction (the locker's,
			// or a pooled one's) the statistics snapshot stays frozen
			watch, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer watch.Close(ctx)
			if running := bundleBackends(t, watch, false); len(running) != 0 {
				t.Fatalf("backends %v run bundle statements before the push", running)
			}

			release := testkit.LockPartition(t, dsn, "p")
			defer release()
			done := make(chan error, 1)
			go func() {
				_, err := db.PushBundle(ctx, []segment.Write{w})
				done <- err
			}()
			var waiting []int32
			for len(waiting) == 0 {
				select {
				case err := <-done:
					t.Fatalf("the push ended (%v) before its statement was seen waiting for the lock under %q", err, pgwire.BundleTag)
				case <-time.After(5 * time.Millisecond):
				}
				waiting = bundleBackends(t, watch, true)
			}
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the push is still waiting for the lock, long past its statement timeout")
			}
			if !pgwire.IsTimeout(err) || !errors.Is(err, pgwire.ErrStatementTimeout) {
				t.Fatalf("want a statement timeout, got %v", err)
			}
			if st := db.Stats(); st.StatementTimeouts != 1 || st.QuarantinedConnection != 1 {
				t.Fatalf("stats %+v", st)
			}
			// The lock is still held: only the cancel request can have
			// ended the statement, and only closing the connection ends
			// the backend that ran it.
			testkit.WaitFor(t, "the cancelled bundle statement to end", 10*time.Second, func() bool {
				return len(bundleBackends(t, watch, false)) == 0
			})
			testkit.WaitFor(t, "the cancelled statement's connection to be closed", 10*time.Second, func() bool {
				var n int
				if err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, waiting[0]).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n == 0
			})
			release()
			if r := push(t, db, w)[0]; r.Status != segment.Queued || r.BaseOffset != 2 {
				t.Fatalf("after the lock is released: %+v", r)
			}
		})
	}
}

// bundleBackends lists the backends of conn's database, other than conn's,
// running a bundle statement (its text opens with pgwire.BundleTag);
// lockWait: only those waiting for a lock.
func bundleBackends(t *testing.T, conn *pgx.Conn, lockWait bool) []int32 {
	t.Helper()
	rows, err := conn.Query(context.Background(), `SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'
		  AND starts_with(query, $1) AND (NOT $2 OR wait_event_type = 'Lock')`, pgwire.BundleTag, lockWait)
	if err != nil {
		t.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	return pids
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
