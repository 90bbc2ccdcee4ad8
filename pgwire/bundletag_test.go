package pgwire_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

// Every statement a bundle sends (log_push_multi_v2's call, the
// known-partition statement and its one-segment form) is prepared once per
// connection with its text opening with pgwire.BundleTag, and then only
// executed: the tag is part of the text PostgreSQL keeps, and does not make
// a statement be prepared again.
func TestBundleStatementsAreTaggedAndPreparedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// One connection, so that every bundle runs on the one whose prepared
	// statements are read.
	db, err := pgwire.Open(ctx, pgwire.Config{DSN: newDBDSN(t), MaxConns: 1, AcquireTimeout: time.Minute, StatementTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	const rounds = 5
	ids := map[string]segment.Result{}
	for i := 0; i < rounds; i++ {
		// new partitions each round (log_push_multi_v2), then each known
		// one alone (the one-segment statement), then both together (the
		// known-partition statement)
		fresh := []segment.Write{write("q", fmt.Sprintf("new%d", i), "a"), write("q", fmt.Sprintf("new%d-b", i), "a")}
		for k, r := range push(t, db, fresh...) {
			ids[fresh[k].Partition] = r
		}
		var known []segment.Write
		for _, p := range []string{"k1", "k2"} {
			w := write("q", p, fmt.Sprintf("t%d", i))
			if r, ok := ids[p]; ok {
				w.PartitionID, w.QueueID, w.Verified = r.PartitionID, r.QueueID, r.BaseOffset
			}
			ids[p] = push(t, db, w)[0]
			w = write("q", p, fmt.Sprintf("u%d", i))
			w.PartitionID, w.QueueID, w.Verified = ids[p].PartitionID, ids[p].QueueID, ids[p].BaseOffset
			known = append(known, w)
		}
		for k, r := range push(t, db, known...) {
			if r.Status != segment.Queued {
				t.Fatalf("round %d: known segment %d: %+v", i, k, r)
			}
			ids[known[k].Partition] = r
		}
	}
	rows, err := db.Pool().Query(ctx, `SELECT name, statement, generic_plans + custom_plans FROM pg_prepared_statements
		WHERE starts_with(statement, $1) ORDER BY statement`, pgwire.BundleTag)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var name, text string
		var runs int64
		if err := rows.Scan(&name, &text, &runs); err != nil {
			t.Fatal(err)
		}
		n++
		t.Logf("%s: %d runs: %.60s…", name, runs, text)
		if runs < rounds {
			t.Errorf("%s ran %d times over %d rounds", name, runs, rounds)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// log_push_multi_v2, knownSQL, knownOneSQL: each prepared once
	if n != 3 {
		t.Fatalf("%d bundle statements prepared on the connection, want 3", n)
	}
}
