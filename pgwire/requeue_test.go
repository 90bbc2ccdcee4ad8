package pgwire_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

// Dead letters are picked oldest first with their messages, the tenant's
// only, leaving out those whose message retention removed or a delete
// tombstoned; a requeue writes its pushes and removes its dead letters
// together, or, when a push is a duplicate or a dead letter is gone
// (another tenant's included), writes nothing at all.
func TestRequeue(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	other := tenancy.TenantID(uuid.New())
	push(t, db, write("rq", "p", "gone"))
	push(t, db, write("rq", "p", "a", "b", "c", "d"))
	l := lease()
	r := pop(t, db, pgwire.PopRequest{Queue: "rq", Partition: "p", Group: "g", Lease: l, Batch: 10})
	pid := r.PartitionID
	ack(t, db, pid, "g", &l, pgwire.AckItem{TransactionID: "gone", Status: "dlq"}, pgwire.AckItem{TransactionID: "a", Status: "completed"},
		pgwire.AckItem{TransactionID: "b", Status: "dlq"}, pgwire.AckItem{TransactionID: "c", Status: "dlq"}, pgwire.AckItem{TransactionID: "d", Status: "dlq"})
	// Retention removed "gone"'s segment; "d" is deleted (tombstoned).
	if _, err := db.Pool().Exec(ctx, `DELETE FROM queen.log_segments WHERE partition_id = $1 AND base_offset = 1`, pid); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool().Exec(ctx, `INSERT INTO queen.log_tombstones (partition_id, message_offset) VALUES ($1, 5)`, pid); err != nil {
		t.Fatal(err)
	}

	sel := pgwire.RequeueSelect{Queue: "rq", Limit: 1}
	dls, more, found, err := db.RequeueCandidates(ctx, sel)
	if err != nil || !found || !more || len(dls) != 1 || dls[0].TransactionID != "b" || !dls[0].Found || dls[0].Offset != 3 ||
		string(dls[0].Message.Frame.Payload) != `{"tx":"b"}` || dls[0].Group != "g" || dls[0].Partition != "p" {
		t.Fatalf("first: %+v more %v found %v %v", dls, more, found, err)
	}
	sel.Limit = 10
	if dls, more, _, err = db.RequeueCandidates(ctx, sel); err != nil || more || len(dls) != 2 || dls[1].TransactionID != "c" {
		t.Fatalf("all: %+v more %v %v", dls, more, err)
	}
	one := pgwire.RequeueSelect{Queue: "rq", PartitionID: pid, TransactionID: "c", Limit: 10}
	if got, _, _, err := db.RequeueCandidates(ctx, one); err != nil || len(got) != 1 || got[0].Offset != 4 {
		t.Fatalf("one: %+v %v", got, err)
	}
	if got, _, found, err := db.RequeueCandidates(ctx, pgwire.RequeueSelect{Tenant: other, Queue: "rq", Limit: 10}); err != nil || found || len(got) != 0 {
		t.Fatalf("the other tenant: %+v %v %v", got, found, err)
	}

	last := func() int64 {
		return count(t, db.Pool(), `SELECT last_offset FROM queen.log_partitions WHERE id = $1`, pid)
	}
	letters := func() int64 {
		return count(t, db.Pool(), `SELECT count(*) FROM queen.dead_letters WHERE partition_id = $1`, pid)
	}
	// Another tenant cannot remove them: its requeue finds them gone and
	// writes nothing.
	if _, err := db.Requeue(ctx, pgwire.RequeueRequest{Tenant: other, Writes: []segment.Write{write("rq", "p", "x")}, DeadLetters: []int64{dls[0].ID}}); !errors.Is(err, pgwire.ErrRequeueGone) {
		t.Fatalf("another tenant's requeue: %v", err)
	}
	// A push that repeats a stored transactionId aborts it whole.
	_, err = db.Requeue(ctx, pgwire.RequeueRequest{Writes: []segment.Write{write("rq", "p", "new-b", "a")}, DeadLetters: []int64{dls[0].ID}})
	var dup *pgwire.RequeueDuplicateError
	if !errors.As(err, &dup) || len(dup.Frames) != 1 || dup.Frames[0] != (pgwire.DuplicateFrame{Write: 0, Frame: 1, Offset: 2}) {
		t.Fatalf("duplicate: %v", err)
	}
	if last() != 5 || letters() != 4 {
		t.Fatalf("after the refusals: last offset %d, %d dead letters", last(), letters())
	}

	res, err := db.Requeue(ctx, pgwire.RequeueRequest{Writes: []segment.Write{write("rq", "p", "new-b", "new-c")}, DeadLetters: []int64{dls[0].ID, dls[1].ID}})
	if err != nil || len(res) != 1 || res[0].BaseOffset != 6 || res[0].PartitionID != pid {
		t.Fatalf("requeue: %+v %v", res, err)
	}
	if last() != 7 || letters() != 2 {
		t.Fatalf("after the requeue: last offset %d, %d dead letters", last(), letters())
	}
	// Again: the dead letters are gone, and nothing is written.
	if _, err := db.Requeue(ctx, pgwire.RequeueRequest{Writes: []segment.Write{write("rq", "p", "new-b2")}, DeadLetters: []int64{dls[0].ID}}); !errors.Is(err, pgwire.ErrRequeueGone) {
		t.Fatalf("repeat: %v", err)
	}
	if last() != 7 {
		t.Fatalf("the repeat wrote: last offset %d", last())
	}
	if got, more, _, err := db.RequeueCandidates(ctx, sel); err != nil || more || len(got) != 0 {
		t.Fatalf("left to requeue: %s %v %v", fmt.Sprint(got), more, err)
	}
}

// Requeues of the same dead letters at once write one push: the others
// wait on the partition row and then find their push a duplicate or,
// where the queue's window is 0, the dead letters gone; none deadlocks.
func TestConcurrentRequeuesWriteOnce(t *testing.T) {
	t.Parallel()
	for _, window := range []int{60, 0} {
		t.Run(fmt.Sprint("window ", window), func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			ctx := context.Background()
			push(t, db, write("cr", "p", "a", "b"))
			if _, err := db.Pool().Exec(ctx, `UPDATE queen.queues SET dedup_window_seconds = $1`, window); err != nil {
				t.Fatal(err)
			}
			l := lease()
			r := pop(t, db, pgwire.PopRequest{Queue: "cr", Partition: "p", Group: "g", Lease: l, Batch: 10})
			ack(t, db, r.PartitionID, "g", &l, pgwire.AckItem{TransactionID: "a", Status: "dlq"}, pgwire.AckItem{TransactionID: "b", Status: "dlq"})
			dls, _, _, err := db.RequeueCandidates(ctx, pgwire.RequeueSelect{Queue: "cr", Limit: 10})
			if err != nil || len(dls) != 2 {
				t.Fatalf("candidates: %+v %v", dls, err)
			}
			const n = 8
			errs := make(chan error, n)
			for i := 0; i < n; i++ {
				go func() {
					_, err := db.Requeue(ctx, pgwire.RequeueRequest{Writes: []segment.Write{write("cr", "p", "re-a", "re-b")},
						DeadLetters: []int64{dls[1].ID, dls[0].ID}})
					errs <- err
				}()
			}
			ok := 0
			for i := 0; i < n; i++ {
				err := <-errs
				var dup *pgwire.RequeueDuplicateError
				switch {
				case err == nil:
					ok++
				case window > 0 && errors.As(err, &dup), window == 0 && errors.Is(err, pgwire.ErrRequeueGone):
				default:
					t.Errorf("requeue: %v", err)
				}
			}
			if ok != 1 {
				t.Fatalf("%d requeues committed", ok)
			}
			if last := count(t, db.Pool(), `SELECT last_offset FROM queen.log_partitions WHERE id = $1`, r.PartitionID); last != 4 {
				t.Fatalf("last offset %d, want 4", last)
			}
		})
	}
}
