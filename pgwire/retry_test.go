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

// A bundle call that PostgreSQL kills to break a deadlock is run again and
// succeeds: its caller sees the bundle written, once, and never "deadlock
// detected"; the retry is counted under the statement's name. The deadlock
// is made on purpose: another transaction holds the higher of the two
// partition rows the bundle locks (in ascending id), waits until the bundle
// holds the lower one and waits for it, then asks for the lower one. That
// transaction waits longer than the bundle before PostgreSQL looks for a
// cycle (its deadlock_timeout), so the bundle is the one killed.
func TestDeadlockedCallIsRunAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := newDB(t)
	push(t, db, write("dl", "a", "a0"), write("dl", "b", "b0"))
	ids := textRows(t, db.Pool(), `SELECT id::text FROM queen.log_partitions ORDER BY id`)
	if len(ids) != 2 {
		t.Fatalf("partitions %v, want 2", ids)
	}
	tx, err := db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL deadlock_timeout = '1min'`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM queen.log_partitions WHERE id = $1::int8 FOR UPDATE`, ids[1]); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		res []segment.Result
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := db.PushGeneralOnly(ctx, []segment.Write{write("dl", "a", "a1"), write("dl", "b", "b1")})
		done <- answer{res, err}
	}()
	testkit.WaitFor(t, "the bundle waiting for the row this transaction holds", time.Minute, func() bool {
		return count(t, db.Pool(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%log_push_multi_v2%'`) == 1
	})
	// Granted once PostgreSQL has killed the bundle's first try.
	if _, err := tx.Exec(ctx, `SELECT 1 FROM queen.log_partitions WHERE id = $1::int8 FOR UPDATE`, ids[0]); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil {
		t.Fatalf("the bundle failed: %v", a.err)
	}
	for i, r := range a.res {
		if r.Status != segment.Queued || r.BaseOffset != 2 {
			t.Fatalf("segment %d: %+v, want queued at offset 2", i, r)
		}
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.log_segments`); n != 4 {
		t.Fatalf("%d segments stored, want 4", n)
	}
	if got := db.Stats().Retries; got["log_push_multi_v2"] != 1 || len(got) != 1 {
		t.Fatalf("retries %v, want log_push_multi_v2: 1", got)
	}
}

// A call that failed for a reason PostgreSQL does not ask to retry is not
// run again.
func TestFailedCallIsNotRunAgain(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	_, err := db.PushGeneralOnly(context.Background(), []segment.Write{write("bad name with spaces and \x00", "p", "x")})
	if err == nil || errors.Is(err, pgwire.ErrUnavailable) {
		t.Fatalf("a refused bundle answered %v", err)
	}
	if got := db.Stats().Retries; len(got) != 0 {
		t.Fatalf("retries %v after a refusal", got)
	}
}
