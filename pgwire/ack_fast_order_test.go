package pgwire_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

// Two whole-batch statements over the same cursor rows, given in opposite
// orders, run at the same moment, many times. Both lock in ascending
// (partition, group), so neither deadlocks and the second to lock waits
// for the first at the lowest row and then finds that nothing it was given
// still matches: every round, one statement applies every acknowledgement
// and the other none. Locking in input order would deadlock (a round whose
// statements are made to overlap surely does), or split the rows between
// the two.
func TestWholeAcksInOppositeOrdersNeverDeadlock(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	const parts, rounds = 12, 30
	groups := []string{"g1", "g2"}
	var writes []segment.Write
	for p := 0; p < parts; p++ {
		writes = append(writes, write("order.q", fmt.Sprint("p", p), fmt.Sprint("seed-", p)))
	}
	pids := make([]int64, parts)
	for i, r := range push(t, db, writes...) {
		pids[i] = r.PartitionID
	}
	// Seed the cursor rows (the first pop of a group goes through
	// consumer_pop_v1) and acknowledge the seeds.
	for _, g := range groups {
		for p := range pids {
			r := pop(t, db, pgwire.PopRequest{Queue: "order.q", Partition: fmt.Sprint("p", p), Group: g, SubscriptionMode: "all"})
			if r.Status != pgwire.PopDelivered {
				t.Fatalf("seed pop: %+v", r)
			}
			ack(t, db, r.PartitionID, g, nil, completed(txids(r.Messages)...)...)
		}
	}
	// Cursor rows of other groups, leased, as a busy deployment has, and
	// statistics of them: the plan then reaches the rows by key for each
	// acknowledgement as given (a nested loop over them), where only the
	// sort keeps the lock order.
	if _, err := db.Pool().Exec(ctx, `INSERT INTO queen.consumer_cursors (partition_id, consumer_group, lease_id, lease_expires_at, delivered_to, delivered_count)
		SELECT p, 'other' || k, gen_random_uuid(), now() + interval '1 hour', 1, 1 FROM unnest($1::int8[]) p, generate_series(1, 200) k`, pids); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool().Exec(ctx, "ANALYZE queen.consumer_cursors, queen.log_partitions, queen.queues"); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < rounds; round++ {
		writes = writes[:0]
		for p := 0; p < parts; p++ {
			name := fmt.Sprint("p", p)
			writes = append(writes, write("order.q", name, fmt.Sprintf("r%d-%s-a", round, name), fmt.Sprintf("r%d-%s-b", round, name)))
		}
		push(t, db, writes...)
		var acks []pgwire.WholeAck
		for _, g := range groups {
			l := lease() // one lease per group, over every partition, as one pop of several partitions has
			for _, pid := range pids {
				r := pop(t, db, pgwire.PopRequest{PartitionID: pid, Group: g, Lease: l})
				if r.Status != pgwire.PopDelivered || len(r.Messages) != 2 {
					t.Fatalf("round %d: pop of %d for %s: %+v", round, pid, g, r)
				}
				acks = append(acks, pgwire.WholeAck{PID: pid, Group: g, Lease: l, Status: "completed", TransactionIDs: txids(r.Messages)})
			}
		}
		reversed := slices.Clone(acks)
		slices.Reverse(reversed)
		inputs := [2][]pgwire.WholeAck{acks, reversed}
		var res [2][]pgwire.WholeAckResult
		var errs [2]error
		// Every other round a row in the middle is held by another
		// transaction until both statements wait for a lock, so that they
		// surely overlap; the other rounds run free.
		release := func() {}
		if round%2 == 1 {
			tx, err := db.Pool().Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, `SELECT 1 FROM queen.consumer_cursors WHERE partition_id = $1 AND consumer_group = 'g1' FOR UPDATE`, pids[parts/2]); err != nil {
				t.Fatal(err)
			}
			release = func() {
				waitForLockWaits(t, db, 2)
				if err := tx.Rollback(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for k := range inputs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				res[k], errs[k] = db.AckWhole(ctx, inputs[k])
			}()
		}
		close(start)
		release()
		wg.Wait()
		for k, err := range errs {
			if err != nil {
				t.Fatalf("round %d: statement %d: %v", round, k, err)
			}
		}
		var applied [2]int
		for k := range res {
			for _, r := range res[k] {
				if r.Applied {
					applied[k]++
				}
			}
		}
		if !(applied[0] == len(acks) && applied[1] == 0) && !(applied[0] == 0 && applied[1] == len(acks)) {
			t.Fatalf("round %d: the statements applied %d and %d of %d acknowledgements each: one should apply all, the other none",
				round, applied[0], applied[1], len(acks))
		}
		for i := range acks {
			a, b := res[0][i], res[1][len(acks)-1-i]
			if a.Applied == b.Applied {
				t.Fatalf("round %d: the acknowledgement of %d for %s applied %v and %v", round, acks[i].PID, acks[i].Group, a.Applied, b.Applied)
			}
		}
		if n := count(t, db.Pool(), `SELECT count(*) FROM queen.consumer_cursors WHERE consumer_group IN ('g1', 'g2') AND (lease_id IS NOT NULL OR cursor_offset <> delivered_to)`); n != 0 {
			t.Fatalf("round %d: %d cursor rows not moved to what their lease delivered", round, n)
		}
	}
}

// waitForLockWaits polls until n whole-batch acknowledgements of the
// test's database wait for a lock.
func waitForLockWaits(t *testing.T, db *pgwire.DB, n int64) {
	t.Helper()
	testkit.WaitFor(t, fmt.Sprintf("%d whole-batch acknowledgements to wait for a lock together", n), time.Minute, func() bool {
		return count(t, db.Pool(), `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND query LIKE '/* queen:ack */%'`) == n
	})
}

// TestWholeAckStatementLocksInAscendingOrder reads the generic plan of the
// whole-batch acknowledgement, as the bridge's connections make it, on a
// fresh database and after statistics of a few hundred cursor rows: the
// cursor rows are locked (LockRows) as they come out of a sort by
// (partition, group), or of a join that keeps that order, so every such
// statement locks in the one order.
func TestWholeAckStatementLocksInAscendingOrder(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	check := func(when string) {
		t.Helper()
		const types = "uuid[], int8[], text[], uuid[], int4[], bytea[], bytea[], text[], int4[]"
		const args = `'{00000000-0000-0000-0000-000000000000,00000000-0000-0000-0000-000000000000}', '{2,1}', '{g,g}',
			'{00000000-0000-0000-0000-000000000001,00000000-0000-0000-0000-000000000001}', '{1,1}', '{"\\x00","\\x00"}',
			'{"\\x01","\\x01"}', '{completed,dlq}', '{0,0}'`
		for _, st := range []struct{ name, types, sql, args string }{
			{"with dead letters", types + ", text[], text[]", pgwire.WholeAckSQL, "(" + args + ", '{b}', '{\"\"}')"},
			{"cursor moves alone", types, pgwire.WholeAckMovesSQL, "(" + args + ")"},
		} {
			plan := preparedPlan(t, db, st.types, st.sql, st.args)
			if err := lockedInOrder(plan); err != nil {
				t.Fatalf("%s, %s: %v:\n%s", when, st.name, err, strings.Join(plan, "\n"))
			}
		}
	}
	check("fresh database")
	var writes []segment.Write
	for p := 0; p < 300; p++ {
		writes = append(writes, write("plan.w", fmt.Sprint("p", p), fmt.Sprint("t", p)))
	}
	for i := range push(t, db, writes...) {
		for _, g := range []string{"a", "b"} {
			pop(t, db, pgwire.PopRequest{Queue: "plan.w", Partition: writes[i].Partition, Group: g, SubscriptionMode: "all"})
		}
	}
	if _, err := db.Pool().Exec(ctx, "ANALYZE queen.consumer_cursors, queen.log_partitions, queen.queues"); err != nil {
		t.Fatal(err)
	}
	check("six hundred cursor rows, analysed")
}

// lockedInOrder checks that the plan has one LockRows node whose input
// comes in ascending (partition, group): a Sort by them, or a Merge Join on
// them, reached through Nested Loops only (which keep their outer input's
// order). LockRows locks the rows in the order its input hands them over.
func lockedInOrder(plan []string) error {
	at := -1
	for i, line := range plan {
		if strings.Contains(line, "LockRows") {
			if at >= 0 {
				return fmt.Errorf("two LockRows nodes")
			}
			at = i
		}
	}
	if at < 0 {
		return fmt.Errorf("no LockRows node")
	}
	for node := firstChild(plan, at); ; node = firstChild(plan, node) {
		if node < 0 {
			return fmt.Errorf("the input of LockRows reaches no Sort or Merge Join")
		}
		name := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(plan[node]), "->"))
		detail := strings.Join(details(plan, node), "\n")
		switch {
		case strings.HasPrefix(name, "Nested Loop"):
			continue
		case strings.HasPrefix(name, "Sort"):
			if strings.Contains(detail, "Sort Key: c.partition_id, c.consumer_group") || strings.Contains(detail, "Sort Key: v.pid, v.grp") {
				return nil
			}
			return fmt.Errorf("the rows are sorted by something else: %s", detail)
		case strings.HasPrefix(name, "Merge Join"):
			if strings.Contains(detail, "Merge Cond: ((v.pid = c.partition_id) AND (v.grp = c.consumer_group)") ||
				strings.Contains(detail, "Merge Cond: ((c.partition_id = v.pid) AND (c.consumer_group = v.grp)") {
				return nil
			}
			return fmt.Errorf("the rows are merged on something else: %s", detail)
		default:
			return fmt.Errorf("the input of LockRows passes %q, which may not keep the order", name)
		}
	}
}

// indentOf is where a plan line's text (or its "->") starts.
func indentOf(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }

// firstChild is the line of node i's first (outer) input, or -1.
func firstChild(plan []string, i int) int {
	for k := i + 1; k < len(plan) && indentOf(plan[k]) > indentOf(plan[i]); k++ {
		if strings.HasPrefix(strings.TrimSpace(plan[k]), "->") {
			return k
		}
	}
	return -1
}

// details are node i's lines before its first input: its conditions and keys.
func details(plan []string, i int) []string {
	var out []string
	for k := i + 1; k < len(plan) && indentOf(plan[k]) > indentOf(plan[i]) && !strings.HasPrefix(strings.TrimSpace(plan[k]), "->"); k++ {
		out = append(out, strings.TrimSpace(plan[k]))
	}
	return out
}

// Concurrent requests fused into one statement may carry the same whole
// batch twice, with different statuses (a client resending its ack). The
// row is locked once per acknowledgement, each lock after the update of the
// one before, so the second finds the row updated by this very statement
// and drops out: exactly one applies, and the other writes nothing (no dead
// letters of its own), as if the two had come one after the other.
func TestTheSameWholeBatchTwiceInOneStatement(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	push(t, db, write("twice.q", "p", "seed"))
	first := pop(t, db, pgwire.PopRequest{Queue: "twice.q", Partition: "p", Group: "g", SubscriptionMode: "all"})
	pid := first.PartitionID
	ack(t, db, pid, "g", nil, completed("seed")...)
	for _, pair := range [][2]string{{"completed", "dlq"}, {"dlq", "completed"}, {"retry", "dlq"}, {"dlq", "failed"}, {"dlq", "dlq"}} {
		push(t, db, write("twice.q", "p", pair[0]+"-"+pair[1]+"-1", pair[0]+"-"+pair[1]+"-2"))
		l := lease()
		r := pop(t, db, pgwire.PopRequest{PartitionID: pid, Group: "g", Lease: l})
		ids := txids(r.Messages)
		if len(ids) != 2 {
			t.Fatalf("%v: popped %+v", pair, r)
		}
		res := wholeAck(t, db,
			pgwire.WholeAck{PID: pid, Group: "g", Lease: l, Status: pair[0], TransactionIDs: ids, Errors: []string{"first", "first"}},
			pgwire.WholeAck{PID: pid, Group: "g", Lease: l, Status: pair[1], TransactionIDs: ids, Errors: []string{"second", "second"}})
		if res[0].Applied == res[1].Applied {
			t.Fatalf("%v: applied %v and %v", pair, res[0].Applied, res[1].Applied)
		}
		won, msg := pair[0], "first"
		if res[1].Applied {
			won, msg = pair[1], "second"
		}
		dead := count(t, db.Pool(), `SELECT count(*) FROM queen.dead_letters WHERE partition_id = $1 AND message_offset > $2`, pid, r.Cursor)
		mine := count(t, db.Pool(), `SELECT count(*) FROM queen.dead_letters WHERE partition_id = $1 AND message_offset > $2 AND error_message = $3`, pid, r.Cursor, msg)
		if want := map[bool]int64{true: 2, false: 0}[won == "dlq"]; dead != want || mine != want {
			t.Fatalf("%v: %s applied; %d dead letters, %d of them its own, want %d", pair, won, dead, mine, want)
		}
		var cursor, retries int64
		var leased bool
		if err := db.Pool().QueryRow(ctx, `SELECT cursor_offset, retry_count, lease_id IS NOT NULL FROM queen.consumer_cursors
			WHERE partition_id = $1 AND consumer_group = 'g'`, pid).Scan(&cursor, &retries, &leased); err != nil {
			t.Fatal(err)
		}
		moves := won == "completed" || won == "dlq"
		if leased || (moves && cursor != r.To) || (!moves && cursor != r.Cursor) || retries != map[bool]int64{true: 1, false: 0}[won == "failed"] {
			t.Fatalf("%v: %s applied; cursor %d (delivered (%d, %d]), retry count %d, lease held %v", pair, won, cursor, r.Cursor, r.To, retries, leased)
		}
		if !moves {
			ack(t, db, pid, "g", nil, completed(ids...)...)
		}
	}
}

// The hot tail's claim statement, which fuses concurrent pops' claims,
// locks its rows in the one lock order: each row is locked by a lateral
// subquery run once per claim, in the order of its outer input, which is
// the claims sorted by (partition, group).
func TestTailClaimStatementLocksInAscendingOrder(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	plan := preparedPlan(t, db, "uuid[], text[], uuid[], bool[], int8[], int8[], int8[], int4[], bytea[], int8[]", pgwire.PopTailSQL, `(
		'{00000000-0000-0000-0000-000000000000,00000000-0000-0000-0000-000000000000}', '{g,h}',
		'{00000000-0000-0000-0000-000000000001,00000000-0000-0000-0000-000000000002}', '{false,false}',
		'{2,1}', '{0,0}', '{1,1}', '{1,1}', '{"\\x00","\\x00"}', '{1,1}')`)
	text := strings.Join(plan, "\n")
	lock := -1
	for i, line := range plan {
		if strings.Contains(line, "LockRows") {
			if lock >= 0 {
				t.Fatalf("two LockRows nodes:\n%s", text)
			}
			lock = i
		}
	}
	// The nearest Nested Loop above LockRows must take its outer rows from
	// the sorted claims, and LockRows must be in its inner input.
	loop := -1
	for i := lock - 1; i >= 0; i-- {
		if indentOf(plan[i]) < indentOf(plan[lock]) && strings.Contains(plan[i], "Nested Loop") {
			loop = i
			break
		}
	}
	if lock < 0 || loop < 0 {
		t.Fatalf("no LockRows under a Nested Loop:\n%s", text)
	}
	outer := firstChild(plan, loop)
	if outer < 0 || !strings.Contains(plan[outer], "Sort") || !slices.Contains(details(plan, outer), "Sort Key: v.pid, v.grp") || outer > lock {
		t.Fatalf("the locking loop's outer input is not the claims sorted by (partition, group):\n%s", text)
	}
}
