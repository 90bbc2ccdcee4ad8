package pgwire_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
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

// write builds a segment of one frame per transactionId.
func write(queue, partition string, txids ...string) segment.Write {
	frames := make([]segment.Frame, len(txids))
	for i, tx := range txids {
		frames[i] = segment.Frame{ID: uuid.Must(uuid.NewV7()), TransactionID: tx, Payload: []byte(fmt.Sprintf(`{"tx":%q}`, tx))}
	}
	return segment.Write{
		Queue: queue, Partition: partition, Count: int32(len(frames)),
		Hashes: segment.AppendHashes(nil, frames), Blob: segment.Pack(nil, frames),
	}
}

func push(t testing.TB, db *pgwire.DB, writes ...segment.Write) []segment.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := db.PushBundle(ctx, writes)
	if err != nil {
		t.Fatalf("PushBundle: %v", err)
	}
	if len(res) != len(writes) {
		t.Fatalf("%d results for %d writes", len(res), len(writes))
	}
	return res
}

func count(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

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

// textRows runs a query of one text column (an EXPLAIN, a schema listing)
// on q (a pool or one connection, for its prepared statements and
// settings) and answers its rows.
func textRows(t testing.TB, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, sql string, args ...any) []string {
	t.Helper()
	rows, err := q.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
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
