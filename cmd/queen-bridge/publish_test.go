package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// publisher commits transactions that each publish one message to queue
// "relayed", until stopped: the even ones with a transactionId of their
// own, the odd ones with none (the relay derives one from the WAL). It
// records the transactionIds it named of those that committed.
type publisher struct {
	committed atomic.Int64
	mu        sync.Mutex // guards named: the publishing goroutine writes, the test reads after it ends
	named     []string
}

func (p *publisher) run(t *testing.T, pool *pgxpool.Pool, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // owned by the test: it closes stop and waits
		defer wg.Done()
		ctx := context.Background()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			txid := ""
			if i%2 == 0 {
				txid = fmt.Sprintf("k-%d", i)
			}
			err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, `SELECT queen.publish('relayed', 'p' || ($1::int % 4), jsonb_build_object('n', $1::int), nullif($2, ''))`, i, txid)
				return err
			})
			if err != nil {
				t.Errorf("publish %d: %v", i, err)
				return
			}
			p.committed.Add(1)
			if txid != "" {
				p.mu.Lock()
				p.named = append(p.named, txid)
				p.mu.Unlock()
			}
		}
	}()
	return &wg
}

// relayReady waits until queen.publish exists in the database and a
// bridge reads its slot.
func relayReady(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	testkit.WaitFor(t, "the relay to read its slot", 90*time.Second, func() bool {
		var ok bool
		err := pool.QueryRow(context.Background(), `SELECT to_regprocedure('queen.publish(text,text,jsonb,text,text)') IS NOT NULL
			AND EXISTS (SELECT 1 FROM pg_replication_slots WHERE database = current_database() AND active)`).Scan(&ok)
		return err == nil && ok
	})
}

// A bridge killed with SIGKILL while it relays, and started again, stores
// every committed message once: those whose pushes committed before the
// kill are recognised when the slot hands them out again.
func TestPublishRelayKilledStoresEachMessageOnce(t *testing.T) {
	bin := binary(t)
	dsn := testenv.NewDatabase(t)
	env := []string{"QUEEN_PG_DSN=" + dsn, "QUEEN_DATA_DIR=" + t.TempDir()}
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	r := startBinary(t, bin, env...)
	relayReady(t, pool)
	p := &publisher{}
	stop := make(chan struct{})
	wg := p.run(t, pool, stop)
	testkit.WaitFor(t, "messages relayed", 90*time.Second, func() bool { return storedMessages(t, dsn) >= 300 })
	_ = r.Cmd.Process.Signal(syscall.SIGKILL) // mid-relay: transactions keep committing
	<-r.Done
	before := p.committed.Load()
	testkit.WaitFor(t, "transactions committed while no bridge runs", 90*time.Second, func() bool { return p.committed.Load() >= before+200 })

	r = startBinary(t, bin, env...)
	testkit.WaitFor(t, "relaying again", 90*time.Second, func() bool { return storedMessages(t, dsn) > before+300 })
	close(stop)
	wg.Wait()
	committed := p.committed.Load()
	testkit.WaitFor(t, "every committed message stored", 90*time.Second, func() bool { return storedMessages(t, dsn) >= committed })
	r.interrupt(t)

	stored := testkit.StoredTransactionIDs(t, pool, "relayed")
	for id, c := range stored {
		if c != 1 {
			t.Errorf("%s stored %d times", id, c)
		}
	}
	for _, id := range p.named {
		if stored[id] != 1 {
			t.Errorf("%s committed, stored %d times", id, stored[id])
		}
	}
	if int64(len(stored)) != committed {
		t.Errorf("%d transactions committed, %d messages stored", committed, len(stored))
	}
	t.Logf("%d committed (%d before the kill), each stored once", committed, before)
}
