package testkit

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Count runs a query of one bigint and answers it; it fails the test on an
// error.
func Count(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// Querier is a pool or one connection (for its prepared statements and
// session settings).
type Querier interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}

// TextRows runs a query of one text column (an EXPLAIN, a schema listing)
// on q and answers its rows.
func TextRows(t testing.TB, q Querier, sql string, args ...any) []string {
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
