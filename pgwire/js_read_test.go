package pgwire_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/queenbridge/queenbridge/pgwire"
)

// ReadAfter answers many ranges in one call, each after its offset and
// within its bounds, skipping tombstoned offsets.
func TestReadAfter(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	const q = "js.read"
	r1 := push(t, db, write(q, "p0", "a1", "a2", "a3"), write(q, "p1", "b1"), write(q, "p2", "c1", "c2"))
	push(t, db, write(q, "p0", "a4", "a5"), write(q, "p2", "c3", "c4"))
	push(t, db, write(q, "p2", "c5", "c6"))
	push(t, db, write(q, "p2", "c7", "c8"))
	p0, p1, p2 := r1[0].PartitionID, r1[1].PartitionID, r1[2].PartitionID
	// Retention removed p2's first two segments (offsets 1-4).
	if _, err := db.Pool().Exec(ctx, `DELETE FROM queen.log_segments WHERE partition_id = $1 AND end_offset <= 4`, p2); err != nil {
		t.Fatal(err)
	}
	// Offset 4 of p0 deleted.
	if _, err := db.Pool().Exec(ctx, `INSERT INTO queen.log_tombstones (partition_id, message_offset) VALUES ($1, 4)`, p0); err != nil {
		t.Fatal(err)
	}
	const each = int64(len(`{"tx":"a1"}`)) // every payload's size
	cases := []struct {
		r    pgwire.JSRange
		want string // transactionIds, next, full
	}{
		{pgwire.JSRange{PartitionID: p0, After: 0, Limit: 2}, "[a1 a2] next 2 full false"},
		{pgwire.JSRange{PartitionID: p0, After: 2, Limit: 10}, "[a3 a5] next 5 full false"},
		{pgwire.JSRange{PartitionID: p0, After: 3, Limit: 1}, "[a5] next 5 full false"},
		{pgwire.JSRange{PartitionID: p0, After: 0, Limit: 10, MaxBytes: 2*each + 1}, "[a1 a2] next 2 full true"},
		{pgwire.JSRange{PartitionID: p0, After: 0, Limit: 10, MaxBytes: each - 1}, "[] next 0 full true"},
		{pgwire.JSRange{PartitionID: p0, After: 5, Limit: 3}, "[] next 5 full false"},
		{pgwire.JSRange{PartitionID: p1, After: 0, Limit: 5}, "[b1] next 1 full false"},
		{pgwire.JSRange{PartitionID: p1, After: 1, Limit: 5}, "[] next 1 full false"},
		{pgwire.JSRange{PartitionID: 1 << 40, After: 0, Limit: 5}, "[] next 0 full false"},
		// After a gap: counted from the first segment left.
		{pgwire.JSRange{PartitionID: p2, After: 0, Limit: 1}, "[c5] next 5 full false"},
		{pgwire.JSRange{PartitionID: p2, After: 0, Limit: 3}, "[c5 c6 c7] next 7 full false"},
		{pgwire.JSRange{PartitionID: p2, After: 5, Limit: 2}, "[c6 c7] next 7 full false"},
		{pgwire.JSRange{PartitionID: p2, After: 5, Limit: 50}, "[c6 c7 c8] next 8 full false"},
	}
	ranges := make([]pgwire.JSRange, len(cases))
	for i, c := range cases {
		ranges[i] = c.r
	}
	runs, err := db.ReadAfter(ctx, ranges)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != len(cases) {
		t.Fatalf("%d runs for %d ranges", len(runs), len(cases))
	}
	for i, c := range cases {
		run := runs[i]
		if got := fmt.Sprintf("%v next %d full %v", txids(run.Messages), run.Next, run.Full); got != c.want || run.PartitionID != c.r.PartitionID {
			t.Errorf("range %+v: %s (partition %d), want %s", c.r, got, run.PartitionID, c.want)
		}
		for _, m := range run.Messages {
			if m.CreatedAt.IsZero() || m.Offset <= c.r.After || fmt.Sprint(m.Frame.TransactionID[1]-'0') != fmt.Sprint(m.Offset) {
				t.Errorf("range %+v: message %d %q at %v", c.r, m.Offset, m.Frame.TransactionID, m.CreatedAt)
			}
		}
	}
	for _, bad := range []pgwire.JSRange{{PartitionID: 0, Limit: 1}, {PartitionID: p0, Limit: 0}, {PartitionID: p0, After: -1, Limit: 1}, {PartitionID: p0, Limit: 1, MaxBytes: -1}} {
		if _, err := db.ReadAfter(ctx, []pgwire.JSRange{{PartitionID: p0, Limit: 1}, bad}); err == nil {
			t.Errorf("range %+v accepted", bad)
		}
	}
}
