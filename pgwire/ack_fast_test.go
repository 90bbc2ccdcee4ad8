package pgwire_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/queenbridge/queenbridge/pgwire"
)

func wholeAck(t testing.TB, db *pgwire.DB, acks ...pgwire.WholeAck) []pgwire.WholeAckResult {
	t.Helper()
	res, err := db.AckWhole(context.Background(), acks)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A pop by partition id (the one-statement pop) records what it delivered;
// an acknowledgement naming exactly that, in order, with one status, is
// one cursor move; anything else is left for consumer_ack_v1, unwritten.
func TestWholeBatchAck(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	push(t, db, write("w", "p", "a", "b", "c"))
	push(t, db, write("w", "p", "d", "e", "f"))
	first := pop(t, db, pgwire.PopRequest{Queue: "w", Partition: "p", Batch: 1, Group: "g"}) // seeds the cursor row
	pid := first.PartitionID
	a := ack(t, db, pid, "g", nil, completed("a")...)
	if a.Cursor != 1 {
		t.Fatalf("first ack: %+v", a)
	}
	l := lease()
	r := pop(t, db, pgwire.PopRequest{PartitionID: pid, Group: "g", Lease: l, Batch: 4})
	if r.Status != pgwire.PopDelivered || fmt.Sprint(txids(r.Messages)) != "[b c d e]" || r.Cursor != 1 || r.To != 5 || r.Partition != "p" {
		t.Fatalf("pop by id: %+v", r)
	}
	if n := count(t, db.Pool(), fmt.Sprintf(`SELECT count(*) FROM queen.consumer_cursors WHERE partition_id = %d AND delivered_hashes IS NOT NULL`, pid)); n != 1 {
		t.Fatalf("no hash entries recorded")
	}
	// Reordered, partial, wrong lease: not applied, nothing written.
	bad := []pgwire.WholeAck{
		{PID: pid, Group: "g", Lease: l, Status: "completed", TransactionIDs: []string{"c", "b", "d", "e"}},
		{PID: pid, Group: "g", Lease: l, Status: "completed", TransactionIDs: []string{"b", "c", "d"}},
		{PID: pid, Group: "g", Lease: lease(), Status: "completed", TransactionIDs: []string{"b", "c", "d", "e"}},
		{PID: pid, Group: "other", Lease: l, Status: "completed", TransactionIDs: []string{"b", "c", "d", "e"}},
		{Tenant: [16]byte{1}, PID: pid, Group: "g", Lease: l, Status: "completed", TransactionIDs: []string{"b", "c", "d", "e"}},
	}
	for i, res := range wholeAck(t, db, bad...) {
		if res.Applied {
			t.Fatalf("ack %d applied: %+v", i, bad[i])
		}
	}
	res := wholeAck(t, db, pgwire.WholeAck{PID: pid, Group: "g", Lease: l, Status: "completed", TransactionIDs: []string{"b", "c", "d", "e"}})
	if !res[0].Applied || res[0].Cursor != 5 || res[0].Queue != "w" || res[0].Partition != "p" || res[0].DeadLettered {
		t.Fatalf("whole ack: %+v", res[0])
	}
	// Repeated: not applied; the general path answers as it does today.
	if res := wholeAck(t, db, pgwire.WholeAck{PID: pid, Group: "g", Lease: l, Status: "completed", TransactionIDs: []string{"b", "c", "d", "e"}}); res[0].Applied {
		t.Fatalf("repeated whole ack applied")
	}
	// dlq: the dead letters are written in the same statement.
	l = lease()
	r = pop(t, db, pgwire.PopRequest{PartitionID: pid, Group: "g", Lease: l, Batch: 4})
	if fmt.Sprint(txids(r.Messages)) != "[f]" {
		t.Fatalf("last pop: %+v", r)
	}
	res = wholeAck(t, db, pgwire.WholeAck{PID: pid, Group: "g", Lease: l, Status: "dlq", TransactionIDs: []string{"f"}, Errors: []string{"boom"}})
	if !res[0].Applied || !res[0].DeadLettered || res[0].Cursor != 6 {
		t.Fatalf("dlq ack: %+v", res[0])
	}
	if n := count(t, db.Pool(), fmt.Sprintf(`SELECT count(*) FROM queen.dead_letters WHERE partition_id = %d AND message_offset = 6 AND transaction_id = 'f' AND error_message = 'boom'`, pid)); n != 1 {
		t.Fatalf("dead letter not written")
	}
	if r := pop(t, db, pgwire.PopRequest{PartitionID: pid, Group: "g"}); r.Status != pgwire.PopEmpty {
		t.Fatalf("drained: %+v", r)
	}
}
