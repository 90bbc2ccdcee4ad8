package testkit

import (
	"context"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/pgwire"
)

// OpenDB opens the queen database at dsn with up to maxConns connections,
// migrates it and closes it when the test ends. Tests count rows and
// offsets: the product's fail-fast waits (a second to get a connection,
// which includes making one) are not what they test, and a busy machine
// can take longer, so a connection and a statement get a minute each.
func OpenDB(t testing.TB, dsn string, maxConns int32) *pgwire.DB {
	t.Helper()
	ctx := context.Background()
	db, err := pgwire.Open(ctx, pgwire.Config{DSN: dsn, MaxConns: maxConns, AcquireTimeout: time.Minute, StatementTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}
