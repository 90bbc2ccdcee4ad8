package pgwire_test

import (
	"context"
	"testing"

	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// newDB opens a migrated queen database of its own for the test.
func newDB(t testing.TB) *pgwire.DB {
	t.Helper()
	return openDSN(t, testenv.NewDatabase(t))
}

// inEachForm runs test in parallel against a database of its own for each
// form of the lone claim and acknowledgement (pgwire.StatementForms).
func inEachForm(t *testing.T, test func(*testing.T, *pgwire.DB)) {
	t.Parallel()
	for _, form := range pgwire.StatementForms {
		t.Run(form.Name, func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			form.Set(db)
			test(t, db)
		})
	}
}

func openDSN(t testing.TB, dsn string) *pgwire.DB { return testkit.OpenDB(t, dsn, 40) }

// The helpers every test of the schema and of the statements shares.
var (
	write    = testkit.Write
	push     = testkit.Push
	count    = testkit.Count
	textRows = testkit.TextRows
)

func newDBDSN(t testing.TB) string { return testenv.NewDatabase(t) }

// rowsWritten counts everything a push can write.
func rowsWritten(t testing.TB, db *pgwire.DB) int64 {
	return count(t, db.Pool(), `SELECT (SELECT count(*) FROM queen.queues) + (SELECT count(*) FROM queen.log_partitions)
		+ (SELECT count(*) FROM queen.log_segments) + (SELECT count(*) FROM queen.log_txns)
		+ (SELECT coalesce(sum(last_offset), 0) FROM queen.log_partitions)`)
}

func lastOffset(t testing.TB, db *pgwire.DB, queue, partition string) int64 {
	return count(t, db.Pool(), `SELECT p.last_offset FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
		WHERE q.name = $1 AND p.name = $2`, queue, partition)
}

func setWindow(t testing.TB, db *pgwire.DB, queue string, seconds int) {
	t.Helper()
	if _, err := db.Pool().Exec(context.Background(), `UPDATE queen.queues SET dedup_window_seconds = $2 WHERE name = $1`, queue, seconds); err != nil {
		t.Fatal(err)
	}
}

// preparedPlan is the plan a statement of the bridge gets on one of the
// pool's connections (its session settings: a generic plan): the
// statement prepared with the parameter types types, explained (COSTS OFF)
// for the arguments args (SQL literals, parenthesised), and deallocated.
func preparedPlan(t testing.TB, db *pgwire.DB, types, statement, args string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "PREPARE plan_under_test("+types+") AS "+statement); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, "DEALLOCATE plan_under_test")
	return textRows(t, conn, "EXPLAIN (COSTS OFF) EXECUTE plan_under_test"+args)
}
