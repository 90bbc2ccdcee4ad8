package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

// holdCycleLock begins a transaction holding what a committing cycle of
// (q, p) holds first, its advisory lock; the test ends it, or its cleanup
// rolls it back.
func holdCycleLock(t *testing.T, db *pgwire.DB, q [16]byte, p int64) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	tx, err := db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(ctx) })
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1::uuid::text), hashtext($2::bigint::text))`, q, p); err != nil {
		t.Fatal(err)
	}
	return tx
}

// advisoryWaits counts the advisory locks of the test's database that
// someone waits for.
func advisoryWaits(t *testing.T, db *pgwire.DB) int64 {
	return count(t, db.Pool(), `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`)
}

// Cycles of one (query, partition) are serialized; cycles of the query's
// other partitions do not wait for them. While a transaction holds the
// lock of (query, p), a cycle of (query, r) commits and a cycle of
// (query, p) waits, then commits once the lock is given back. Then two
// workers cycle the two partitions at once, each its own batches with
// acknowledgements, and each partition's state counts its messages.
func TestStreamCyclesSerializePerPartition(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	src := push(t, db, write("src", "p", "a1"), write("src", "r", "b1"))
	q := register(t, db, tenancy.TenantID{}, "totals", "src", "h")
	p, r := src[0].PartitionID, src[1].PartitionID
	holder := holdCycleLock(t, db, q, p)
	if _, err := db.StreamCycle(ctx, pgwire.StreamCycleRequest{Query: q, PartitionID: r, Ops: []pgwire.StreamOp{upsert("k", "1")}}); err != nil {
		t.Fatalf("a cycle of another partition: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := db.StreamCycle(ctx, pgwire.StreamCycleRequest{Query: q, PartitionID: p, Ops: []pgwire.StreamOp{upsert("k", "1")}})
		done <- err
	}()
	testkit.WaitFor(t, "the cycle of the held partition to wait for its lock", time.Minute, func() bool {
		return advisoryWaits(t, db) == 1
	})
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.stream_state WHERE partition_id = $1`, p); n != 0 {
		t.Fatal("a cycle wrote while another held its (query, partition)")
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	const batches = 10
	var wg sync.WaitGroup
	errs := make(chan error, 2*batches)
	for i, part := range []string{"p", "r"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := 0; b < batches; b++ {
				tx := fmt.Sprintf("%s-%d", part, b)
				res, err := db.PushBundle(ctx, []segment.Write{write("src", part, tx)})
				if err != nil {
					errs <- err
					return
				}
				l := lease()
				if _, err := db.Pop(ctx, pgwire.PopRequest{Queue: "src", Partition: part, Group: "g", Lease: l, Batch: 100}); err != nil {
					errs <- err
					return
				}
				sink := write("sink", part, "out-"+tx)
				sink.Verified = 0
				_, err = db.StreamCycle(ctx, pgwire.StreamCycleRequest{Query: q, PartitionID: res[0].PartitionID, Writes: []segment.Write{sink}, Release: true,
					Ack: &pgwire.StreamAck{Group: "g", Lease: &l, TransactionID: tx, Status: "completed"},
					Ops: []pgwire.StreamOp{upsert(fmt.Sprintf("n%02d", b), fmt.Sprint(i))}})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, pid := range []int64{p, r} {
		if n := count(t, db.Pool(), `SELECT count(*) FROM queen.stream_state WHERE partition_id = $1 AND key LIKE 'n%'`, pid); n != batches {
			t.Fatalf("partition %d holds %d of %d states", pid, n, batches)
		}
	}
	if n := count(t, db.Pool(), `SELECT sum(p.last_offset) FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'sink'`); n != 2*batches {
		t.Fatalf("the sink holds %d", n)
	}
}

// A state read of a (query, partition) waits for a cycle of it that is
// committing and answers with the state that cycle leaves. The SDK's idle
// flush sends a cycle that deletes a closed window; its processing loop
// reads the state just after: that read must not find the window, or the
// loop closes it a second time. A transaction holding the cycle's lock
// deletes the window; the read waits for it, and after its commit finds
// the window gone, the rest there.
func TestStreamStateWaitsForACommittingCycle(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	src := push(t, db, write("src", "p", "a1"))
	q := register(t, db, tenancy.TenantID{}, "totals", "src", "h")
	p := src[0].PartitionID
	if _, err := db.StreamCycle(ctx, pgwire.StreamCycleRequest{Query: q, PartitionID: p,
		Ops: []pgwire.StreamOp{upsert("w1", `{"acc":3,"windowEnd":1}`), upsert("w2", `{"acc":1,"windowEnd":2}`)}}); err != nil {
		t.Fatal(err)
	}
	cycle := holdCycleLock(t, db, q, p)
	if _, err := cycle.Exec(ctx, `DELETE FROM queen.stream_state WHERE query_id = $1 AND partition_id = $2 AND key = 'w1'`, q, p); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		rows []pgwire.StreamStateRow
		err  error
	}
	read := make(chan answer, 1)
	go func() {
		rows, err := db.StreamState(ctx, pgwire.StreamStateQuery{Query: q, PartitionID: p})
		read <- answer{rows, err}
	}()
	testkit.WaitFor(t, "the read to wait for the cycle's lock, or to answer", time.Minute, func() bool {
		return len(read) == 1 || advisoryWaits(t, db) == 1
	})
	if err := cycle.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	a := <-read
	if a.err != nil {
		t.Fatal(a.err)
	}
	var keys []string
	for _, r := range a.rows {
		keys = append(keys, r.Key)
	}
	if fmt.Sprint(keys) != "[w2]" {
		t.Fatalf("a read sent while a cycle was committing found %v: the state from before that cycle, not [w2]", keys)
	}
}

// Cycles race deletes of their source and sink queues and seeks of their
// group: none deadlocks (PostgreSQL counts none), every cycle commits or
// is refused whole, and a deleted source queue leaves no state behind.
func TestStreamCyclesRaceQueueDeleteAndSeek(t *testing.T) {
	t.Parallel()
	dsn := testenv.NewDatabase(t)
	db := openDSN(t, dsn)
	ctx := context.Background()
	q := register(t, db, tenancy.TenantID{}, "totals", "rsrc", "h")
	const rounds = 15
	for round := 0; round < rounds; round++ {
		var pids []int64
		var leases [][16]byte
		for _, part := range []string{"p1", "p2"} {
			res := push(t, db, write("rsrc", part, fmt.Sprintf("%s-%d", part, round)))
			l := lease()
			pop(t, db, pgwire.PopRequest{Queue: "rsrc", Partition: part, Group: "g", Lease: l})
			pids, leases = append(pids, res[0].PartitionID), append(leases, l)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for k, pid := range pids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sink := write("rsink", fmt.Sprint("s", k), fmt.Sprintf("out-%d-%d", round, k))
				sink.Verified = pgwire.NoProbe
				_, err := db.StreamCycle(ctx, pgwire.StreamCycleRequest{Query: q, PartitionID: pid, Writes: []segment.Write{sink}, Release: true,
					Ack: &pgwire.StreamAck{Group: "g", Lease: &leases[k], TransactionID: fmt.Sprintf("p%d-%d", k+1, round), Status: "completed"},
					Ops: []pgwire.StreamOp{upsert("k", "1")}})
				var abort *pgwire.StreamCycleError
				if err != nil && !errors.As(err, &abort) {
					errs <- fmt.Errorf("cycle: %w", err)
				}
			}()
		}
		wg.Add(3)
		go func() {
			defer wg.Done()
			if _, err := db.SeekGroup(ctx, pgwire.SeekRequest{Group: "g", Queue: "rsrc", ToEnd: true}); err != nil {
				errs <- fmt.Errorf("seek: %w", err)
			}
		}()
		go func() {
			defer wg.Done()
			if _, err := db.DeleteQueue(ctx, tenancy.TenantID{}, "rsink"); err != nil {
				errs <- fmt.Errorf("delete the sink: %w", err)
			}
		}()
		go func() {
			defer wg.Done()
			if round%3 == 2 {
				if _, err := db.DeleteQueue(ctx, tenancy.TenantID{}, "rsrc"); err != nil {
					errs <- fmt.Errorf("delete the source: %w", err)
				}
			}
		}()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.stream_state s WHERE NOT EXISTS (SELECT 1 FROM queen.log_partitions p WHERE p.id = s.partition_id)`); n != 0 {
		t.Fatalf("%d state rows outlived their partition", n)
	}
	db.Close()
	check := testkit.OpenDB(t, dsn, 1)
	testkit.WaitFor(t, "the test's connections to end", time.Minute, func() bool {
		return count(t, check.Pool(), `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`) == 0
	})
	if d := count(t, check.Pool(), `SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`); d != 0 {
		t.Fatalf("PostgreSQL detected %d deadlocks", d)
	}
}
