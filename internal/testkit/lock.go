package testkit

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// LockPartition holds the row lock of the partition named partition (FOR
// UPDATE, in a transaction on a connection of its own) until the returned
// function is called: a write to it then waits, as behind a slow writer.
func LockPartition(t testing.TB, dsn, partition string) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM queen.log_partitions WHERE name = $1 FOR UPDATE`, partition); err != nil {
		t.Fatal(err)
	}
	return func() {
		_ = tx.Rollback(ctx)
		_ = conn.Close(ctx)
	}
}
