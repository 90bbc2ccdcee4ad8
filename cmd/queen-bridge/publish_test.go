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

// A bridge killed after the segments of relayed messages committed and
// before it stored its relayed position, kept down until the queue's
// deduplication window (1 s here) is over, and started again, stores
// every committed message once: the slot hands them out again, and the
// marks stored by the segments' own transaction say they are stored,
// which a deduplication probe no longer would. The position's write is
// held back by a lock on its table, so the kill comes exactly there.
func TestPublishRelayKilledBeforeItsPositionStoresEachMessageOnce(t *testing.T) {
	bin := binary(t)
	dsn := testenv.NewDatabase(t)
	env := []string{"QUEEN_PG_DSN=" + dsn, "QUEEN_DATA_DIR=" + t.TempDir(), "QUEEN_DEFAULT_DEDUP_WINDOW_S=1"}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// publishTx publishes ids in one transaction and returns the WAL's
	// insert position just before its commit: the commit is after it.
	publishTx := func(ids ...string) (beforeCommit int64) {
		t.Helper()
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			for i, id := range ids {
				if _, err := tx.Exec(ctx, `SELECT queen.publish('exact', 'p' || ($1::int % 3), jsonb_build_object('n', $1::int), nullif($2, ''))`, i, id); err != nil {
					return err
				}
			}
			return tx.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn() - '0/0'`).Scan(&beforeCommit)
		})
		if err != nil {
			t.Fatal(err)
		}
		return beforeCommit
	}

	r := startBinary(t, bin, env...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the last bridge's log:\n%s", r.Logs())
		}
	})
	relayReady(t, pool)
	first := publishTx("first") // creates the queue, with the 1 s window
	testkit.WaitFor(t, "the first message stored", 90*time.Second, func() bool { return storedMessages(t, dsn) == 1 })
	// The relay stores its position right after its first push: wait for
	// that write before the lock below, which must hold back the write
	// after the next transaction, not this one (the relay would wait on it
	// with the next transaction unread).
	testkit.WaitFor(t, "the position past the first message stored", 90*time.Second, func() bool {
		var position int64
		err := pool.QueryRow(ctx, `SELECT coalesce(max(lsn), 0) FROM queen.publish_positions`).Scan(&position)
		return err == nil && position > first
	})

	// Hold the position's table: the relay's next position write waits.
	hold, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hold.Rollback(ctx) }()
	if _, err := hold.Exec(ctx, `LOCK TABLE queen.publish_positions IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	// One transaction of 60 messages over three partitions: named
	// transactionIds and WAL-derived ones (every other one is "").
	var ids []string
	for i := range 60 {
		id := ""
		if i%2 == 0 {
			id = fmt.Sprintf("x-%d", i)
		}
		ids = append(ids, id)
	}
	beforeCommit := publishTx(ids...)
	testkit.WaitFor(t, "the transaction's messages stored", 90*time.Second, func() bool { return storedMessages(t, dsn) == 61 })
	testkit.WaitFor(t, "the relay waiting to store its position", 90*time.Second, func() bool {
		var waiting bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l
			WHERE l.relation = 'queen.publish_positions'::regclass AND NOT l.granted)`).Scan(&waiting)
		return err == nil && waiting
	})
	_ = r.Cmd.Process.Signal(syscall.SIGKILL)
	<-r.Done
	// The killed bridge's backend still waits for the lock: it would write
	// the position once the lock goes, not noticing its client is gone
	// until then. A machine that died takes its connections with it.
	testkit.WaitFor(t, "the killed bridge's position write ended", 90*time.Second, func() bool {
		var left int
		err := pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(l.pid)) FROM pg_locks l
			WHERE l.relation = 'queen.publish_positions'::regclass AND NOT l.granted`).Scan(&left)
		return err == nil && left == 0
	})
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// The position stops before the transaction; each partition's mark,
	// stored with its segment, covers it.
	var position int64
	if err := pool.QueryRow(ctx, `SELECT max(lsn) FROM queen.publish_positions`).Scan(&position); err != nil || position >= beforeCommit {
		t.Fatalf("stored position %d (%v); want one before the transaction's commit (after %d)", position, err, beforeCommit)
	}
	var marked int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM queen.publish_marks WHERE lsn >= $1`, beforeCommit).Scan(&marked); err != nil || marked != 3 {
		var dump string
		_ = pool.QueryRow(ctx, `SELECT coalesce(string_agg(format('%s %s %s/%s', slot, partition_id, lsn, idx), '; '), 'none') FROM queen.publish_marks`).Scan(&dump)
		t.Fatalf("%d partitions marked at the transaction (%v); want 3; marks: %s; commit after %d", marked, err, dump, beforeCommit)
	}
	var confirmed int64
	if err := pool.QueryRow(ctx, `SELECT confirmed_flush_lsn - '0/0' FROM pg_replication_slots WHERE database = current_database()`).Scan(&confirmed); err != nil {
		t.Fatal(err)
	}
	t.Logf("the slot hands the transaction out again: %v", confirmed < beforeCommit)
	testkit.WaitFor(t, "the deduplication window to pass", 90*time.Second, func() bool {
		var over bool
		err := pool.QueryRow(ctx, `SELECT clock_timestamp() - max(created_at) > interval '2 seconds' FROM queen.log_segments`).Scan(&over)
		return err == nil && over
	})

	r = startBinary(t, bin, env...)
	publishTx("after")
	testkit.WaitFor(t, "the message after the restart stored", 90*time.Second, func() bool {
		return testkit.StoredTransactionIDs(t, pool, "exact")["after"] > 0
	})
	r.interrupt(t)

	stored := testkit.StoredTransactionIDs(t, pool, "exact")
	for id, c := range stored {
		if c != 1 {
			t.Errorf("%s stored %d times", id, c)
		}
	}
	if len(stored) != 62 {
		t.Errorf("%d distinct messages stored, want 62 (60 in the transaction, one before, one after)", len(stored))
	}
}
