package schema_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/pgwire/schema"
	"github.com/queenbridge/queenbridge/segment"
)

// openBridge opens the queen database at dsn as a bridge does, without
// migrating it, with the long waits of testkit.OpenDB.
func openBridge(t testing.TB, dsn string) *pgwire.DB {
	t.Helper()
	db, err := pgwire.Open(context.Background(), pgwire.Config{DSN: dsn, MaxConns: 16, AcquireTimeout: time.Minute, StatementTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// The statements a bridge of migration step 0012 sends (as it sent them:
// its names and columns), through the functions the _vN rule keeps for it.
const (
	olderPushSQL = `SELECT o_pids, o_wins, o_bases, o_ts, o_dup_segs, o_dup_idx, o_dup_offs, o_qids
FROM queen.log_push_multi_v2($1::text[], $2::text[], $3::int4[], $4::bytea[], $5::int8[], $6::bytea[], $7::uuid[], $8::int4[], $9::int8[], $10::int8[], $11::int8[])`
	olderPopSQL = `SELECT o_status, o_pid, o_name, o_last, o_cursor, o_to, o_expires, o_expired, o_bases, o_created, o_payloads, o_gone
			FROM queen.consumer_pop_v1($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`
	olderAckSQL = `SELECT o_err, o_dlq, o_released, o_queue, o_name, o_cursor FROM queen.consumer_ack_v1($1, $2, $3, $4, $5, $6, $7, $8)`
)

// bridgeCalls are the push, pop and acknowledgement of one bridge version.
type bridgeCalls interface {
	push(ctx context.Context, queue, partition string, txids ...string) error
	// pop claims partition for the queue-mode group under lease and
	// answers the partition's id and the transactionIds delivered.
	pop(ctx context.Context, queue, partition string, lease [16]byte, batch int) (int64, []string, error)
	ack(ctx context.Context, pid int64, lease [16]byte, txids []string) error
}

// olderCalls are a bridge of step 0012: its statements on a pool of its own
// (it retries nothing). The load deletes no message, so a pop delivers
// every offset in (cursor, to].
type olderCalls struct{ pool *pgxpool.Pool }

func (o olderCalls) push(ctx context.Context, queue, partition string, txids ...string) error {
	w := write(queue, partition, txids...)
	var pids, bases, qids []int64
	var wins, dupSegs, dupIdx []int32
	var dupOffs []int64
	var ts pgtype.Timestamptz
	if err := o.pool.QueryRow(ctx, olderPushSQL, []string{w.Queue}, []string{w.Partition}, []int32{w.Count}, [][]byte{w.Hashes},
		[]int64{0}, [][]byte{w.Blob}, []pgtype.UUID(nil), []int32(nil), []int64(nil), []int64(nil), []int64(nil)).
		Scan(&pids, &wins, &bases, &ts, &dupSegs, &dupIdx, &dupOffs, &qids); err != nil {
		return err
	}
	if len(bases) != 1 || bases[0] < 1 {
		return fmt.Errorf("log_push_multi_v2 wrote at %v", bases)
	}
	return nil
}

func (o olderCalls) pop(ctx context.Context, queue, partition string, lease [16]byte, batch int) (int64, []string, error) {
	var status string
	var name pgtype.Text
	var pid, last, cursor, to pgtype.Int8
	var expires pgtype.Timestamptz
	var expired pgtype.Bool
	var bases []int64
	var created []time.Time
	var payloads [][]byte
	var gone []int64
	if err := o.pool.QueryRow(ctx, olderPopSQL, pgtype.UUID{Valid: true}, queue, partition, int64(0), pgwire.QueueMode,
		pgtype.UUID{Bytes: lease, Valid: true}, batch, false, "", pgtype.Timestamptz{}).
		Scan(&status, &pid, &name, &last, &cursor, &to, &expires, &expired, &bases, &created, &payloads, &gone); err != nil {
		return 0, nil, err
	}
	if status != pgwire.PopDelivered {
		return pid.Int64, nil, nil
	}
	var txids []string
	for i, base := range bases {
		frames, err := segment.UnpackAll(payloads[i])
		if err != nil {
			return 0, nil, err
		}
		for k, f := range frames {
			if off := base + int64(k); off > cursor.Int64 && off <= to.Int64 {
				txids = append(txids, f.TransactionID)
			}
		}
	}
	return pid.Int64, txids, nil
}

func (o olderCalls) ack(ctx context.Context, pid int64, lease [16]byte, txids []string) error {
	hashes := segment.AppendHashes(nil, framesOf(txids))
	statuses, errs := make([]string, len(txids)), make([]pgtype.Text, len(txids))
	for i := range statuses {
		statuses[i] = "completed"
	}
	var oerr []pgtype.Text
	var dlq []bool
	var released bool
	var queue, name pgtype.Text
	var cursor pgtype.Int8
	if err := o.pool.QueryRow(ctx, olderAckSQL, pgtype.UUID{Valid: true}, pid, pgwire.QueueMode, pgtype.UUID{Bytes: lease, Valid: true},
		hashes, statuses, errs, txids).Scan(&oerr, &dlq, &released, &queue, &name, &cursor); err != nil {
		return err
	}
	for i, e := range oerr {
		if e.Valid {
			return fmt.Errorf("acknowledgement of %s refused: %s", txids[i], e.String)
		}
	}
	return nil
}

// framesOf makes frames of the transactionIds, for their hashes.
func framesOf(txids []string) []segment.Frame {
	frames := make([]segment.Frame, len(txids))
	for i, tx := range txids {
		frames[i].TransactionID = tx
	}
	return frames
}

// newerCalls are this bridge: pgwire's own calls.
type newerCalls struct{ db *pgwire.DB }

func (n newerCalls) push(ctx context.Context, queue, partition string, txids ...string) error {
	res, err := n.db.PushBundle(ctx, []segment.Write{write(queue, partition, txids...)})
	if err == nil && res[0].Status != segment.Queued {
		err = fmt.Errorf("push answered %v", res[0].Status)
	}
	return err
}

func (n newerCalls) pop(ctx context.Context, queue, partition string, lease [16]byte, batch int) (int64, []string, error) {
	r, err := n.db.Pop(ctx, pgwire.PopRequest{Queue: queue, Partition: partition, Group: pgwire.QueueMode, Lease: lease, Batch: batch})
	return r.PartitionID, txids(r.Messages), err
}

func (n newerCalls) ack(ctx context.Context, pid int64, lease [16]byte, ids []string) error {
	a, err := n.db.Ack(ctx, [16]byte{}, pid, pgwire.QueueMode, &lease, completed(ids...))
	if err != nil {
		return err
	}
	for i, e := range a.Errs {
		if e != "" {
			return fmt.Errorf("acknowledgement of %s refused: %s", ids[i], e)
		}
	}
	return nil
}

// load runs producers and consumers of one queue through bridges' calls,
// records every request that failed and counts what was written and
// acknowledged.
type load struct {
	queue  string
	parts  int
	ops    atomic.Int64 // requests answered
	pushed atomic.Int64 // messages pushed
	acked  atomic.Int64 // messages acknowledged
	seq    atomic.Int64 // transactionIds
	mu     sync.Mutex   // guards failed: every load goroutine records here
	failed []error
}

func (l *load) fail(err error) {
	l.mu.Lock()
	l.failed = append(l.failed, err)
	l.mu.Unlock()
}

func (l *load) failures() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// run starts a producer and a consumer per partition on calls, which go on
// until stop is closed; wg is done when every one of them has returned.
func (l *load) run(calls bridgeCalls, stop <-chan struct{}, wg *sync.WaitGroup, seed int64) {
	ctx := context.Background()
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	for k := 0; k < l.parts; k++ {
		wg.Add(2)
		go func(part string) {
			defer wg.Done()
			for !stopped() {
				n := l.seq.Add(2)
				if err := calls.push(ctx, l.queue, part, fmt.Sprint(n-1), fmt.Sprint(n)); err != nil {
					l.fail(fmt.Errorf("push to %s: %w", part, err))
					continue
				}
				l.pushed.Add(2)
				l.ops.Add(1)
			}
		}(fmt.Sprintf("p%d", k))
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			for !stopped() {
				ls := lease()
				pid, ids, err := calls.pop(ctx, l.queue, fmt.Sprintf("p%d", rng.Intn(l.parts)), ls, 1+rng.Intn(6))
				if err != nil {
					l.fail(fmt.Errorf("pop: %w", err))
					continue
				}
				l.ops.Add(1)
				if len(ids) == 0 {
					continue
				}
				if err := calls.ack(ctx, pid, ls, ids); err != nil {
					l.fail(fmt.Errorf("ack of partition %d: %w", pid, err))
					continue
				}
				l.acked.Add(int64(len(ids)))
				l.ops.Add(1)
			}
		}(seed + int64(k))
	}
}

// A newer bridge migrates a database while a bridge of step 0012 (its
// migrations and its function files, testdata/bridge-0012) serves pushes,
// pops and acknowledgements through its own statements, and then both
// serve it; no request fails. Migrations 0015 and 0016 alter
// consumer_cursors and drop an index of log_partitions, the tables every
// pop and acknowledgement reads: the migrations wait their turn for their
// locks, and the index is dropped CONCURRENTLY, so no live statement
// queues behind a migration that waits for it in turn. Each round is a
// database of its own, since the locks must meet for a conflict to show.
func TestOlderBridgeServesWhileNewerMigrates(t *testing.T) {
	t.Parallel()
	const older, rounds, opsAround = 12, 4, 150
	for round := 1; round <= rounds; round++ {
		ctx := context.Background()
		dsn := testenv.NewDatabase(t)
		old := openBridge(t, dsn)
		if err := schema.MigrateOlder(ctx, old.Pool(), older, os.DirFS("testdata/bridge-0012")); err != nil {
			t.Fatal(err)
		}
		l := &load{queue: "rolling", parts: 4}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		l.run(olderCalls{old.Pool()}, stop, &wg, int64(round*100))
		testkit.WaitFor(t, "the older bridge's load before the migration", time.Minute, func() bool { return l.ops.Load() >= opsAround })
		newer := openBridge(t, dsn)
		migErr := newer.Migrate(ctx)
		if migErr == nil { // both versions serve
			l.run(newerCalls{newer}, stop, &wg, int64(round*100+50))
		}
		at := l.ops.Load()
		testkit.WaitFor(t, "the load after the migration", time.Minute, func() bool { return l.ops.Load() >= at+2*opsAround })
		close(stop)
		wg.Wait()
		if migErr != nil {
			t.Fatalf("round %d: the newer bridge's migration: %v", round, migErr)
		}
		if failed := l.failures(); len(failed) > 0 {
			t.Fatalf("round %d: %d requests failed while the newer bridge migrated; the first: %v", round, len(failed), failed[0])
		}
		if n := count(t, old.Pool(), `SELECT count(*) FROM queen.schema_migrations`); n != migrationFiles(t) {
			t.Fatalf("round %d: %d migrations recorded, want %d", round, n, migrationFiles(t))
		}
		if n := count(t, old.Pool(), `SELECT coalesce(sum(last_offset), 0) FROM queen.log_partitions`); n != l.pushed.Load() {
			t.Fatalf("round %d: %d messages stored, %d pushed", round, n, l.pushed.Load())
		}
		if n := count(t, old.Pool(), `SELECT coalesce(sum(cursor_offset), 0) FROM queen.consumer_cursors WHERE consumer_group = $1`,
			pgwire.QueueMode); n != l.acked.Load() {
			t.Fatalf("round %d: the cursors stand %d messages in, %d were acknowledged", round, n, l.acked.Load())
		}
	}
}
