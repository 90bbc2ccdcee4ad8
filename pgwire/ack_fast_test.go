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
func TestWholeBatchAck(t *testing.T) { inEachForm(t, wholeBatchAck) }

func wholeBatchAck(t *testing.T, db *pgwire.DB) {
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
	for i, a := range bad { // each alone: a call of one takes the one-row statement
		if res := wholeAck(t, db, a); res[0].Applied {
			t.Fatalf("ack %d alone applied: %+v", i, a)
		}
	}
	// retry: the lease is released, the cursor stays, the messages come back.
	res := wholeAck(t, db, pgwire.WholeAck{PID: pid, Group: "g", Lease: l, Status: "retry", TransactionIDs: []string{"b", "c", "d", "e"}})
	if !res[0].Applied || res[0].Cursor != 1 || res[0].DeadLettered {
		t.Fatalf("retry ack: %+v", res[0])
	}
	l = lease()
	if r := pop(t, db, pgwire.PopRequest{PartitionID: pid, Group: "g", Lease: l, Batch: 4}); fmt.Sprint(txids(r.Messages)) != "[b c d e]" {
		t.Fatalf("the pop after retry: %+v", r)
	}
	res = wholeAck(t, db, pgwire.WholeAck{PID: pid, Group: "g", Lease: l, Status: "completed", TransactionIDs: []string{"b", "c", "d", "e"}})
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

// One call of whole-batch acknowledgements of several partitions with
// different statuses: a claim from the hot tail records the digest of its
// hash entries and a pop through PostgreSQL the entries, and the
// acknowledgement matches either; only the acknowledgements that may
// dead-letter send their transactionIds, and each dead letter carries its
// own message's id and error, wherever its acknowledgement sits in the call.
func TestWholeAckMixesStatusesAndRecordForms(t *testing.T) {
	inEachForm(t, wholeAckMixesStatusesAndRecordForms)
}

func wholeAckMixesStatusesAndRecordForms(t *testing.T, db *pgwire.DB) {
	ctx := context.Background()
	tailed := newTailFixture(t, db, "mix.tail")
	lt := lease()
	if out, err := popTail(ctx, db, pgwire.PopRequest{Group: "g", Lease: lt}, tailed.claim); err != nil || out[0].Status != pgwire.PopDelivered {
		t.Fatalf("claim from the tail: %+v %v", out, err)
	}
	var recorded []byte
	if err := db.Pool().QueryRow(ctx, `SELECT delivered_hashes FROM queen.consumer_cursors WHERE partition_id = $1 AND consumer_group = 'g'`,
		tailed.pid).Scan(&recorded); err != nil || len(recorded) != 32 {
		t.Fatalf("the tail claim recorded %d bytes (%v), want a 32-byte digest", len(recorded), err)
	}
	popped := func(queue string, ids ...string) (int64, [16]byte) {
		push(t, db, write(queue, "p", ids...))
		l := lease()
		r := pop(t, db, pgwire.PopRequest{Queue: queue, Partition: "p", Group: "g", Lease: l, Batch: 10})
		if fmt.Sprint(txids(r.Messages)) != fmt.Sprint(ids) {
			t.Fatalf("pop of %s: %+v", queue, r)
		}
		return r.PartitionID, l
	}
	// What the digest stands for, and nothing else, matches it: reordered,
	// one id changed (the count alone would let both through), partial or
	// extended, the acknowledgement is left for the general path.
	for _, ids := range [][]string{{"b", "a", "c", "d", "e"}, {"a", "b", "c", "d", "x"}, {"a", "b", "c", "d"}, {"a", "b", "c", "d", "e", "f"}} {
		if res := wholeAck(t, db, pgwire.WholeAck{PID: tailed.pid, Group: "g", Lease: lt, Status: "completed", TransactionIDs: ids}); res[0].Applied {
			t.Fatalf("acknowledgement of %v applied against the digest of [a b c d e]", ids)
		}
	}
	dead1, l1 := popped("mix.dead1", "k", "l")
	moved, l2 := popped("mix.moved", "m")
	dead2, l3 := popped("mix.dead2", "n", "o", "q")
	res := wholeAck(t, db,
		pgwire.WholeAck{PID: tailed.pid, Group: "g", Lease: lt, Status: "completed", TransactionIDs: []string{"a", "b", "c", "d", "e"}},
		pgwire.WholeAck{PID: dead1, Group: "g", Lease: l1, Status: "dlq", TransactionIDs: []string{"k", "l"}, Errors: []string{"ek", ""}},
		pgwire.WholeAck{PID: moved, Group: "g", Lease: l2, Status: "retry", TransactionIDs: []string{"m"}},
		pgwire.WholeAck{PID: dead2, Group: "g", Lease: l3, Status: "dlq", TransactionIDs: []string{"n", "o", "q"}, Errors: []string{"", "eo"}},
	)
	for i, want := range []struct {
		cursor int64
		dead   bool
	}{{6, false}, {2, true}, {0, false}, {3, true}} {
		if r := res[i]; !r.Applied || r.Cursor != want.cursor || r.DeadLettered != want.dead {
			t.Fatalf("ack %d: %+v, want cursor %d, dead-lettered %v", i, r, want.cursor, want.dead)
		}
	}
	var letters string
	if err := db.Pool().QueryRow(ctx, `SELECT string_agg(concat_ws(':', q.name, d.message_offset, d.transaction_id, coalesce(d.error_message, '-')), ' '
		ORDER BY q.name, d.message_offset) FROM queen.dead_letters d JOIN queen.queues q ON q.id = d.queue_id`).Scan(&letters); err != nil {
		t.Fatal(err)
	}
	if want := "mix.dead1:1:k:ek mix.dead1:2:l:- mix.dead2:1:n:- mix.dead2:2:o:eo mix.dead2:3:q:-"; letters != want {
		t.Fatalf("dead letters:\n got %s\nwant %s", letters, want)
	}
	// The retried message comes back; the others are gone.
	if r := pop(t, db, pgwire.PopRequest{PartitionID: moved, Group: "g"}); fmt.Sprint(txids(r.Messages)) != "[m]" {
		t.Fatalf("after retry: %+v", r)
	}
	for _, pid := range []int64{tailed.pid, dead1, dead2} {
		if r := pop(t, db, pgwire.PopRequest{PartitionID: pid, Group: "g"}); r.Status != pgwire.PopEmpty {
			t.Fatalf("partition %d after its ack: %+v", pid, r)
		}
	}
}
