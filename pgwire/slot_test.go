package pgwire_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/pgwire"
)

// A slot opened while the database commits row changes reads the
// messages published after it. pgoutput looks its publication up for
// every change it decodes, as the catalog stood then: a change committed
// after the slot's start and before the publication existed would fail
// the stream (before PostgreSQL 18), at the same place every time the
// relay came back. So the publication is made before the slot.
func TestSlotOpenedDuringWritesReadsItsMessages(t *testing.T) {
	t.Parallel()
	dsn := newDBDSN(t)
	db := openDSN(t, dsn)
	ctx := context.Background()
	if _, err := db.Pool().Exec(ctx, `CREATE TABLE churn (n int)`); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	stopChurn := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopChurn() // a failure below still ends the writer before the test does
	wg.Go(func() {    // owned by the test: stopChurn ends it
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := db.Pool().Exec(ctx, `INSERT INTO churn VALUES ($1)`, i); err != nil {
				t.Errorf("insert %d: %v", i, err)
				return
			}
		}
	})
	name, err := pgwire.DatabaseOf(dsn)
	if err != nil {
		t.Fatal(err)
	}
	slot, err := pgwire.OpenSlot(ctx, dsn, pgwire.SlotName(name), func(string) (uint64, error) { return 0, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer slot.Close(ctx)
	if _, err := db.Pool().Exec(ctx, `SELECT queen.publish('churned', 'p', '{"n": 1}'::jsonb, 'after-the-slot')`); err != nil {
		t.Fatal(err)
	}
	stopChurn()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	txn, err := slot.Next(rctx)
	if err != nil {
		t.Fatalf("the slot's first transaction with a message: %v", err)
	}
	if len(txn.Messages) != 1 {
		t.Fatalf("%d messages in the first transaction, want 1", len(txn.Messages))
	}
}

// A slot made before its publication (as a bridge could under load before
// the publication came first) with a change committed in between fails
// with an error that names the cause and where the way out is written.
func TestSlotOlderThanItsPublicationSaysSo(t *testing.T) {
	t.Parallel()
	dsn := newDBDSN(t)
	db := openDSN(t, dsn)
	ctx := context.Background()
	name, err := pgwire.DatabaseOf(dsn)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`SELECT pg_create_logical_replication_slot('` + pgwire.SlotName(name) + `', 'pgoutput')`,
		`CREATE TABLE churn (n int)`,
		`INSERT INTO churn VALUES (1)`,
	} {
		if _, err := db.Pool().Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	slot, err := pgwire.OpenSlot(ctx, dsn, pgwire.SlotName(name), func(string) (uint64, error) { return 0, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer slot.Close(ctx)
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = slot.Next(rctx)
	if err == nil || !strings.Contains(err.Error(), "is older than publication queen_publish") || !strings.Contains(err.Error(), "A slot older than its publication") {
		t.Fatalf("reading a slot older than its publication: %v", err)
	}
}
