package pgwire_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

// TestKnownStatementLocksInAscendingOrder reads the generic plan of the
// known-partition statement, as the bridge's connections make it: on a
// fresh database (no partition, no statistics), after autovacuum would have
// analysed it with three partitions (one page: a sequential scan is the
// cheapest plan there), and after a thousand partitions and an ANALYZE. Its UPDATE must reach log_partitions through
// the primary key only: a sequential or bitmap scan there would hand rows
// to the UPDATE in heap order, which is not ascending id, and on a large
// table it would read every partition row per call.
func TestKnownStatementLocksInAscendingOrder(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	check := func(when string) {
		t.Helper()
		plan := preparedPlan(t, db, "int8[], int8[], int4[], bytea[], bytea[], int8[], text[]", pgwire.KnownSQL, `('{1,2}', '{0,0}', '{1,1}', '{"\\x00","\\x00"}', '{"\\x00","\\x00"}', '{1,1}', '{a,b}')`)
		text := strings.Join(plan, "\n")
		if strings.Contains(text, "Seq Scan on log_partitions") || strings.Contains(text, "Bitmap Heap Scan on log_partitions") ||
			!regexp.MustCompile(`Index Scan using log_partitions_\w+ on log_partitions`).MatchString(text) {
			t.Fatalf("%s: the UPDATE does not reach log_partitions through an index on the key it is given:\n%s", when, text)
		}
	}
	check("fresh database")
	push(t, db, write("plan.q", "a", "t"), write("plan.q", "b", "t"), write("plan.q", "c", "t"))
	if _, err := db.Pool().Exec(ctx, "ANALYZE queen.log_partitions"); err != nil {
		t.Fatal(err)
	}
	check("three partitions, analysed")
	var writes []segment.Write
	for i := 0; i < 1000; i++ {
		writes = append(writes, write("plan.q", fmt.Sprintf("p%d", i), "t"))
		if len(writes) == 100 {
			push(t, db, writes...)
			writes = nil
		}
	}
	if _, err := db.Pool().Exec(ctx, "ANALYZE queen.log_partitions"); err != nil {
		t.Fatal(err)
	}
	check("a thousand partitions")
}

// TestFreshDeploymentNeverScansPartitions: on a database that has never been
// analysed, provisioning a thousand partitions and writing to them through
// both paths reads log_partitions through its indexes only.
func TestFreshDeploymentNeverScansPartitions(t *testing.T) {
	t.Parallel()
	dsn := newDBDSN(t)
	// A deployment's first minute: three partitions, analysed (as
	// autovacuum would) while the table is one page, where a sequential
	// scan is the cheapest plan, and one connection that keeps the plans it
	// makes then while the table grows to a thousand partitions.
	first := openDSN(t, dsn)
	small := push(t, first, write("fresh.q", "a", "t"), write("fresh.q", "b", "t"), write("fresh.q", "c", "t"))
	if _, err := first.Pool().Exec(context.Background(), "ANALYZE queen.log_partitions"); err != nil {
		t.Fatal(err)
	}
	first.Close()
	reader := openDSN(t, dsn)
	seq0, _ := partitionScans(t, reader)
	db, err := pgwire.Open(context.Background(), pgwire.Config{DSN: dsn, MaxConns: 1, AcquireTimeout: time.Minute, StatementTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var again []segment.Write
	for i, p := range []string{"a", "b", "c"} {
		w := write("fresh.q", p, "u")
		w.PartitionID, w.QueueID, w.Verified = small[i].PartitionID, small[i].QueueID, 1
		again = append(again, w)
	}
	push(t, db, again...)
	push(t, db, again[0])
	pids, qids, last := map[string]int64{}, map[string]int64{}, map[string]int64{}
	for round := 0; round < 3; round++ {
		var writes []segment.Write
		for i := 0; i < 1000; i++ {
			p := fmt.Sprintf("p%d", i)
			w := write("fresh.q", p, fmt.Sprint("t", round))
			w.PartitionID, w.QueueID, w.Verified = pids[p], qids[p], last[p] // round 0: unknown, then known
			writes = append(writes, w)
			if len(writes) == 50 {
				for k, r := range push(t, db, writes...) {
					pids[writes[k].Partition], qids[writes[k].Partition], last[writes[k].Partition] = r.PartitionID, r.QueueID, r.BaseOffset
				}
				writes = nil
			}
		}
	}
	db.Close()
	seq, idx := partitionScans(t, reader)
	t.Logf("log_partitions: %d sequential scans, %d index scans", seq-seq0, idx)
	if idx < 2000 {
		t.Fatalf("statistics show %d index scans of log_partitions after 2,000 known segments", idx)
	}
	if seq != seq0 {
		t.Fatalf("%d sequential scans of log_partitions", seq-seq0)
	}
}

// partitionScans waits until no other session of the database is left
// (a backend flushes its statistics as it exits), then reads how often
// log_partitions was scanned sequentially and through an index.
func partitionScans(t *testing.T, reader *pgwire.DB) (seq, idx int64) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for count(t, reader.Pool(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`) > int64(reader.Pool().Stat().TotalConns()-1) {
		if time.Now().After(deadline) {
			t.Fatal("the other sessions did not end")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := reader.Pool().QueryRow(ctx, `SELECT seq_scan, coalesce(idx_scan, 0) FROM pg_stat_user_tables
		WHERE schemaname = 'queen' AND relname = 'log_partitions'`).Scan(&seq, &idx); err != nil {
		t.Fatal(err)
	}
	return seq, idx
}
