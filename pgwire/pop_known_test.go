package pgwire_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/queenbridge/queenbridge/pgwire"
)

// rowVersion is a cursor row's version and lock marker: any write or row
// lock changes one of them.
func rowVersion(t *testing.T, db *pgwire.DB, pid int64, group string) string {
	t.Helper()
	var v string
	if err := db.Pool().QueryRow(context.Background(), `SELECT concat_ws('|', xmin::text, xmax::text)
		FROM queen.consumer_cursors WHERE partition_id = $1 AND consumer_group = $2`, pid, group).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The one-statement pop (by partition id, cursor row present) writes
// nothing when it delivers nothing: an empty partition or a live lease
// leaves the cursor row's version and lock marker as they were; a claim
// writes one row version.
func TestPopByIDWritesOnlyWhenItDelivers(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	push(t, db, write("e", "p", "a", "b"))
	first := pop(t, db, pgwire.PopRequest{Queue: "e", Partition: "p", Group: "g", AutoAck: true}) // seeds the row
	if first.Status != pgwire.PopDelivered || first.To != 2 {
		t.Fatalf("first pop: %+v", first)
	}
	pid := first.PartitionID
	before := rowVersion(t, db, pid, "g")
	if r := pop(t, db, pgwire.PopRequest{PartitionID: pid, Group: "g"}); r.Status != pgwire.PopEmpty || r.Cursor != 2 {
		t.Fatalf("empty pop: %+v", r)
	}
	if after := rowVersion(t, db, pid, "g"); after != before {
		t.Fatalf("an empty pop wrote the cursor row: %s -> %s", before, after)
	}
	push(t, db, write("e", "p", "c"))
	l := lease()
	r := pop(t, db, pgwire.PopRequest{PartitionID: pid, Group: "g", Lease: l})
	if r.Status != pgwire.PopDelivered || fmt.Sprint(txids(r.Messages)) != "[c]" {
		t.Fatalf("pop: %+v", r)
	}
	claimed := rowVersion(t, db, pid, "g")
	if claimed == before {
		t.Fatal("a claim left the cursor row as it was")
	}
	if r := pop(t, db, pgwire.PopRequest{PartitionID: pid, Group: "g"}); r.Status != pgwire.PopLeased {
		t.Fatalf("pop under a live lease: %+v", r)
	}
	if after := rowVersion(t, db, pid, "g"); after != claimed {
		t.Fatalf("a pop refused by a live lease wrote the cursor row: %s -> %s", claimed, after)
	}
}
