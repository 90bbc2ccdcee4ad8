package client_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/client"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// client.Publish in a pgx.Tx: what the committed transaction published is
// stored, with the item's transactionId and payload; the rolled-back one's
// is not; a bad item is refused before the database sees it.
func TestPublishInATransaction(t *testing.T) {
	b := newBridge(t, bridgeBinary(t))
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, b.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	testkit.WaitFor(t, "the relay to install queen.publish", 90*time.Second, func() bool {
		var ok bool
		err := pool.QueryRow(ctx, `SELECT to_regprocedure('queen.publish(text,text,jsonb,text,text)') IS NOT NULL`).Scan(&ok)
		return err == nil && ok
	})
	publish := func(it client.Item, commit bool) {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := client.Publish(ctx, tx, it); err != nil {
			t.Fatal(err)
		}
		if commit {
			err = tx.Commit(ctx)
		} else {
			err = tx.Rollback(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	publish(client.Item{Queue: "orders", Partition: "eu", Payload: json.RawMessage(`{"n":0}`), TransactionID: "rolled-back"}, false)
	publish(client.Item{Queue: "orders", Partition: "eu", Payload: json.RawMessage(`{"n":1}`), TransactionID: "order-1"}, true)
	var stored map[string]int
	testkit.WaitFor(t, "order-1 stored", 90*time.Second, func() bool {
		stored = testkit.StoredTransactionIDs(t, pool, "orders")
		return stored["order-1"] == 1
	})
	if len(stored) != 1 {
		t.Fatalf("stored %v, want order-1 alone", stored)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, bad := range []struct {
		it   client.Item
		want string
	}{
		{client.Item{Partition: "p"}, "queue is required"},
		{client.Item{Queue: "q", Partition: "a\nb"}, "partition must not contain control characters"},
		{client.Item{Queue: strings.Repeat("q", 256)}, "queue must be 1..255"},
	} {
		if err := client.Publish(ctx, tx, bad.it); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want %q", bad.it, err, bad.want)
		}
	}
	// Refused before the database: the transaction still works.
	if err := client.Publish(ctx, tx, client.Item{Queue: "orders", Payload: json.RawMessage(`1`)}); err != nil {
		t.Fatalf("after refusals, in the same transaction: %v", err)
	}
	var _ client.Execer[pgconn.CommandTag] = pgx.Tx(nil) // a pgx.Tx is an Execer
}
