package schema_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/pgwire/schema"
)

// How each migration file runs: index statements alone outside a
// transaction, made concurrent and idempotent; a marked file as written,
// if its index statements are concurrent and idempotent; and a strong lock
// on a table the file did not create only when its header says so.
func TestMigrationPlan(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, sql string
		version   int
		outside   []string
		refused   string // a part of the refusal; "" when accepted
	}{
		{name: "released index drop", version: 16, sql: "-- why\nDROP INDEX queen.log_partitions_last_write_at;",
			outside: []string{"DROP INDEX CONCURRENTLY IF EXISTS queen.log_partitions_last_write_at"}},
		{name: "index create and drop", version: 20, sql: "CREATE UNIQUE INDEX a_x ON queen.a (x) WHERE x > 0;\nDROP INDEX IF EXISTS queen.b_y;",
			outside: []string{"CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS a_x ON queen.a (x) WHERE x > 0", "DROP INDEX CONCURRENTLY IF EXISTS queen.b_y"}},
		{name: "marked", version: 20, sql: "-- migrate: outside transaction\nCREATE INDEX CONCURRENTLY IF NOT EXISTS a_x ON queen.a (x);\nVACUUM queen.a;",
			outside: []string{"CREATE INDEX CONCURRENTLY IF NOT EXISTS a_x ON queen.a (x)", "VACUUM queen.a"}},
		{name: "marked, plain index", version: 20, sql: "-- migrate: outside transaction\nCREATE INDEX a_x ON queen.a (x);", refused: "CONCURRENTLY IF NOT EXISTS"},
		{name: "marked, dollar quotes", version: 20, sql: "-- migrate: outside transaction\nDO $$ BEGIN END $$;", refused: "dollar-quoted"},
		{name: "undeclared lock", version: 20, sql: "ALTER TABLE queen.consumer_cursors ADD COLUMN z int;", refused: "queen.consumer_cursors"},
		{name: "index in a transaction", version: 20, sql: "CREATE TABLE queen.n (x int);\nCREATE INDEX a_x ON queen.a (x);", refused: "queen.a"},
		{name: "declared lock", version: 20, sql: "-- lock: ACCESS EXCLUSIVE on queen.consumer_cursors: a column type\nALTER TABLE queen.consumer_cursors ALTER COLUMN z TYPE bigint;"},
		{name: "new table", version: 20, sql: "CREATE TABLE queen.n (x int);\nALTER TABLE queen.n ADD COLUMN y int;\nCREATE INDEX n_x ON queen.n (x);"},
		{name: "released before the rule", version: 17, sql: "ALTER TABLE queen.consumer_cursors ADD COLUMN start_offset bigint;"},
	} {
		outside, err := schema.PlanMigration(c.version, c.name, c.sql)
		switch {
		case c.refused != "":
			if err == nil || !strings.Contains(err.Error(), c.refused) {
				t.Errorf("%s: %v, want a refusal naming %q", c.name, err, c.refused)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case strings.Join(outside, "\n") != strings.Join(c.outside, "\n"):
			t.Errorf("%s: outside %q, want %q", c.name, outside, c.outside)
		}
	}
}

// The migration transaction takes its strong locks first, in the order the
// bridge's statements take those tables (queues before cursors), each once
// in the strongest mode asked for, and none on a table a migration makes.
func TestMigrationLocksInTheLiveOrder(t *testing.T) {
	t.Parallel()
	got := schema.PreLocks(
		"ALTER TABLE queen.consumer_cursors ADD COLUMN a int;\nCREATE INDEX c_a ON queen.consumer_cursors (a);",
		"-- lock: ACCESS EXCLUSIVE on queen.queues: a column\nALTER TABLE queen.queues ADD COLUMN b int;",
		"CREATE TABLE queen.n (x int);\nALTER TABLE queen.n ADD COLUMN y int;\nCREATE TRIGGER t AFTER INSERT ON queen.zz FOR EACH ROW EXECUTE FUNCTION f();",
	)
	want := []string{"ACCESS EXCLUSIVE queen.queues", "ACCESS EXCLUSIVE queen.consumer_cursors", "SHARE ROW EXCLUSIVE queen.zz"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("locks %q, want %q", got, want)
	}
}

// An index that a failed CONCURRENTLY build left invalid is dropped and
// built again by the migration that makes it: IF NOT EXISTS alone would
// keep the invalid one.
func TestInvalidIndexIsBuiltAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := newDB(t)
	for _, sql := range []string{
		`CREATE TABLE queen.twice (x int)`,
		`INSERT INTO queen.twice VALUES (1), (1)`,
	} {
		if _, err := db.Pool().Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Pool().Exec(ctx, `CREATE UNIQUE INDEX CONCURRENTLY twice_x ON queen.twice (x)`); err == nil {
		t.Fatal("a unique index over a repeated value was built")
	}
	valid := func() []string {
		return textRows(t, db.Pool(), `SELECT indisvalid::text FROM pg_index WHERE indexrelid = 'queen.twice_x'::regclass`)
	}
	if v := valid(); len(v) != 1 || v[0] != "false" {
		t.Fatalf("the failed build left %v, want an invalid index", v)
	}
	if _, err := db.Pool().Exec(ctx, `DELETE FROM queen.twice WHERE ctid = (SELECT min(ctid) FROM queen.twice)`); err != nil {
		t.Fatal(err)
	}
	if err := schema.ApplyMigration(ctx, db.Pool(), 9001, "9001_twice_x.sql", "CREATE UNIQUE INDEX twice_x ON queen.twice (x);"); err != nil {
		t.Fatal(err)
	}
	if v := valid(); len(v) != 1 || v[0] != "true" {
		t.Fatalf("after the migration: %v, want a valid index", v)
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.schema_migrations WHERE version = 9001`); n != 1 {
		t.Fatalf("the migration recorded %d times", n)
	}
}

// A migration that needs a lock a live transaction holds gives way: it
// gives up after its lock timeout and tries again, reporting the lock and
// who holds it, while the older bridge's statements on that table go on;
// once the lock is free the migration ends.
func TestMigrationWaitsItsTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := testenv.NewDatabase(t)
	old := openBridge(t, dsn)
	if err := schema.MigrateOlder(ctx, old.Pool(), 12, os.DirFS("testdata/bridge-0012")); err != nil {
		t.Fatal(err)
	}
	older := olderCalls{old.Pool()}
	if err := older.push(ctx, "turn", "p", "a", "b"); err != nil {
		t.Fatal(err)
	}
	// A live transaction of the older bridge, with consumer_cursors in
	// use: migration 0015 alters that table.
	live, err := old.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Rollback(ctx)
	var livePID int32
	if err := live.QueryRow(ctx, `SELECT pg_backend_pid() FROM (SELECT count(*) FROM queen.consumer_cursors) c`).Scan(&livePID); err != nil {
		t.Fatal(err)
	}
	reports := make(chan pgwire.MigrationWait, 64)
	newer, err := pgwire.Open(ctx, pgwire.Config{DSN: dsn, AcquireTimeout: time.Minute, StatementTimeout: time.Minute,
		OnMigrationWait: func(w pgwire.MigrationWait) {
			select {
			case reports <- w:
			default: // the test has what it needs
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer newer.Close()
	migrated := make(chan error, 1)
	go func() { migrated <- newer.Migrate(ctx) }()
	// A report that names the lock: the watcher looks a few times per try,
	// so a try may end before it saw the wait.
	var seen pgwire.MigrationWait
	for seen.Lock == "" {
		select {
		case w := <-reports:
			if !strings.Contains(w.Step, "migration transaction") {
				t.Fatalf("reported %+v, want the migration transaction waiting", w)
			}
			seen = w
		case err := <-migrated:
			t.Fatalf("the migration ended (%v) while a live transaction held its table", err)
		case <-time.After(time.Minute):
			t.Fatal("no migration wait naming its lock reported within a minute")
		}
	}
	// The older bridge serves while the migration waits its turn (the
	// bound is for a statement queued behind a migration that never gives
	// way).
	served, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	l := lease()
	pid, ids, err := older.pop(served, "turn", "p", l, 5)
	if err != nil || len(ids) != 2 {
		t.Fatalf("a pop while the migration waits: %v %v", ids, err)
	}
	if err := older.ack(served, pid, l, ids); err != nil {
		t.Fatalf("an acknowledgement while the migration waits: %v", err)
	}
	if err := live.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-migrated; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(seen.Lock, "AccessExclusiveLock on relation queen.consumer_cursors") {
		t.Fatalf("reported waiting for %q, want consumer_cursors' AccessExclusiveLock", seen.Lock)
	}
	held := false
	for _, b := range seen.Blockers {
		held = held || strings.HasPrefix(b, fmt.Sprintf("pid %d ", livePID))
	}
	if !held {
		t.Fatalf("reported %+v, want the migration held up by pid %d", seen, livePID)
	}
	if n := newer.Stats().MigrationLockWaits; n < 1 {
		t.Fatalf("MigrationLockWaits %d", n)
	}
	if n := count(t, old.Pool(), `SELECT count(*) FROM queen.schema_migrations`); n != migrationFiles(t) {
		t.Fatalf("%d migrations recorded, want %d", n, migrationFiles(t))
	}
}
