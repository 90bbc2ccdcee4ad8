package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/client"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// A two-stage pipeline under faults: 20,000 messages over 20 partitions of
// queue A are forwarded to queue B by consumer processes, one transaction
// per popped batch (its pushes to B and its acknowledgements on A), through
// two bridges, while one consumer process is killed holding a batch it
// never commits, one loses its lease (it waits past it) before it commits,
// and one bridge is restarted. At the end B holds every message exactly
// once, and A's group is at the end of every partition with no dead
// letter. The stale commit must fail; the killed process's batch comes back
// after its lease, to another process.
func TestPipelineExactlyOnceUnderFaults(t *testing.T) {
	const parts, perPart, consumers = 20, 1000, 6
	r := newFaultRig(t, "stage-a")
	r.fill(t, "stage-a", parts, perPart, 25, func(p, k int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"p":%d,"k":%d}`, p, k)) })
	pool, err := pgxpool.New(context.Background(), r.a.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	// Line kinds: C committed, F not committed, H hanging, S the stale
	// commit's outcome.
	roles := []string{"hang", "slow"} // the others: "run"
	for i := 0; i < consumers; i++ {
		role := "run"
		if i < len(roles) {
			role = roles[i]
		}
		r.spawn(t, "TestPipelineHelperProcess", "QUEEN_PIPELINE_ROLE="+role, "QUEEN_PIPELINE_DSN="+r.a.dsn)
	}
	defer r.stopAll()

	count := func(sql string) int64 {
		var n int64
		if err := pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// A's group is done when every partition's cursor is at its end.
	done := func() bool {
		return count(`SELECT count(*) FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
			JOIN queen.consumer_cursors c ON c.partition_id = p.id AND c.consumer_group = 'stage'
			WHERE q.name = 'stage-a' AND c.cursor_offset = p.last_offset`) == parts
	}
	committed, failed := 0, 0
	killed, restarted, stale := false, false, ""
	deadline := time.After(8 * time.Minute)
	var restartDone <-chan struct{}
	poll := time.NewTicker(200 * time.Millisecond)
	defer poll.Stop()
	for !(killed && restarted && stale != "" && done()) {
		select {
		case <-deadline:
			t.Fatalf("time ran out: %d committed, %d not; killed %v, restarted %v, stale commit %q; A done %v", committed, failed, killed, restarted, stale, done())
		case l := <-r.lines:
			switch l.kind {
			case "H":
				if !killed {
					killed = true
					_ = r.procs[l.proc].Process.Kill()
					t.Logf("killed consumer %d while it held a batch, at %d committed", l.proc, committed)
				}
			case "S":
				stale = l.text
			case "C":
				committed++
			case "F":
				failed++
			}
			if !restarted && committed >= 50 {
				restarted = true
				t.Logf("restarting a bridge at %d transactions committed", committed)
				restartDone = r.restartB(t)
			}
		case <-poll.C:
		}
	}
	<-restartDone
	// It fails on its lease, or, when another process forwarded the batch
	// first, on its first push, now a duplicate.
	if !strings.HasPrefix(stale, "failed") || !strings.Contains(stale, "Invalid or expired lease") && !strings.Contains(stale, "duplicate transactionId") {
		t.Fatalf("the commit after the lease was lost: %s", stale)
	}
	r.stopAll()
	r.readers.Wait()
	t.Logf("%d transactions committed, %d not (resends after a restart); the commit after the lost lease %s", committed, failed, stale)
	inB := testkit.StoredTransactionIDs(t, pool, "stage-b")
	if len(inB) != parts*perPart {
		t.Fatalf("B holds %d distinct messages, want %d", len(inB), parts*perPart)
	}
	for p := 0; p < parts; p++ {
		for k := 0; k < perPart; k++ {
			if id := fmt.Sprintf("fwd-p%d-%d", p, k); inB[id] != 1 {
				t.Fatalf("B holds %s %d times", id, inB[id])
			}
		}
	}
	if dead := count(`SELECT count(*) FROM queen.dead_letters`); dead != 0 {
		t.Fatalf("%d dead letters", dead)
	}
}

// TestPipelineHelperProcess is one consumer process of
// TestPipelineExactlyOnceUnderFaults: it pops batches of stage-a for group
// "stage" over NATS and forwards each to stage-b in one transaction
// (transactionIds "fwd-" + the source's, so that a resent commit writes
// nothing twice), printing "C" for each committed and "F" for each not.
// Role hang prints "H" and blocks in its third batch until killed; role
// slow waits past its second batch's lease before it commits and prints
// "S failed <error>" or "S committed".
func TestPipelineHelperProcess(t *testing.T) {
	c, ctx := helperClient(t)
	role := os.Getenv("QUEEN_PIPELINE_ROLE")
	for batches := 1; ctx.Err() == nil; {
		msgs, err := c.Pop(ctx, "stage-a", "stage", client.ConsumeOptions{Batch: 50, Wait: time.Second})
		if err != nil || len(msgs) == 0 {
			if err != nil && ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond) // a bridge restarting
			}
			continue
		}
		tx := client.Txn{Ack: msgs, Group: "stage"}
		for _, m := range msgs {
			tx.Push = append(tx.Push, client.Item{Queue: "stage-b", Partition: m.Partition, Payload: m.Data, TransactionID: "fwd-" + m.TransactionID})
		}
		switch {
		case role == "hang" && batches == 3:
			say("H", "")
			<-ctx.Done()
			return
		case role == "slow" && batches == 2:
			waitLeaseGone(t, ctx, msgs[0].LeaseID) // another process may hold the batch now
			_, err := c.Commit(ctx, tx)
			if err != nil {
				say("S", "failed "+err.Error())
			} else {
				say("S", "committed")
			}
			batches++
			continue
		}
		batches++
		_, err = c.Commit(ctx, tx)
		var notCommitted *client.TxnError
		switch {
		case err == nil:
			say("C", strconv.Itoa(len(msgs)))
		case errors.As(err, &notCommitted):
			say("F", notCommitted.Message)
		case ctx.Err() == nil:
			say("F", err.Error())
		}
	}
}

// waitLeaseGone polls the database (QUEEN_PIPELINE_DSN) until lease holds
// no partition any more: expired (the queue's 3 s), or taken over by
// another process's claim.
func waitLeaseGone(t *testing.T, ctx context.Context, lease string) {
	pool, err := pgxpool.New(ctx, os.Getenv("QUEEN_PIPELINE_DSN"))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	testkit.WaitFor(t, "the slow consumer's lease to expire", time.Minute, func() bool {
		var live int64
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM queen.consumer_cursors
			WHERE lease_id = $1 AND lease_expires_at > clock_timestamp()`, lease).Scan(&live); err != nil {
			t.Fatal(err)
		}
		return live == 0
	})
}
