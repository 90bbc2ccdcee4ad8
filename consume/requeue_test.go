package consume

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/push"
	"github.com/queenbridge/queenbridge/segment"
)

// plainPreparer prepares pushes as the push room does for a queue without
// encryption: one segment per partition, the items' transactionIds, the
// window probed.
type plainPreparer struct{}

func (plainPreparer) PrepareTxn(_ context.Context, tenant tenancy.TenantID, items []jsonapi.Item) (push.Prepared, error) {
	var out push.Prepared
	byPart := map[[2]string]int{}
	var frames [][]segment.Frame
	for _, it := range items {
		k := [2]string{it.Queue, it.Partition}
		w, ok := byPart[k]
		if !ok {
			w = len(out.Writes)
			byPart[k] = w
			out.Writes = append(out.Writes, segment.Write{Tenant: tenant, Queue: it.Queue, Partition: it.Partition})
			frames = append(frames, nil)
		}
		f := segment.Frame{ID: uuid.Must(uuid.NewV7()), TransactionID: it.TransactionID, TraceID: it.TraceID, Payload: it.Payload,
			Subject: it.Subject, Header: it.Header}
		if it.Encoded {
			f.Flags = segment.FlagBase64
		}
		out.Items = append(out.Items, push.PreparedItem{ID: f.ID, TransactionID: f.TransactionID, Write: w, Frame: len(frames[w])})
		frames[w] = append(frames[w], f)
	}
	for w := range out.Writes {
		out.Writes[w].Count = int32(len(frames[w]))
		out.Writes[w].Hashes = segment.AppendHashes(nil, frames[w])
		out.Writes[w].Blob = segment.Pack(nil, frames[w])
	}
	return out, nil
}

// requeueRig is a consumer over a database of its own with dead letters
// written by acks: deadLetter pops partition p of queue q for group and
// sends every message it delivered to the dead letters.
type requeueRig struct {
	t  *testing.T
	db *pgwire.DB
	c  *Consumer
}

func newRequeueRig(t *testing.T, max int) *requeueRig {
	db := testkit.OpenDB(t, testenv.NewDatabase(t), 4)
	reads, marks := startSides(t, db)
	c, err := New(Config{DB: db, Reads: reads, Marks: marks, Payloads: plainPayloads{}, Pushes: plainPreparer{}, RequeueMax: max})
	if err != nil {
		t.Fatal(err)
	}
	return &requeueRig{t: t, db: db, c: c}
}

func (r *requeueRig) push(queue, partition string, txids ...string) {
	r.t.Helper()
	frames := make([]segment.Frame, len(txids))
	for i, tx := range txids {
		frames[i] = segment.Frame{ID: uuid.Must(uuid.NewV7()), TransactionID: tx, Payload: []byte(fmt.Sprintf(`{"tx":%q}`, tx))}
	}
	res, err := r.db.PushBundle(context.Background(), []segment.Write{segmentOf(queue, partition, frames)})
	if err != nil || res[0].Status != segment.Queued {
		r.t.Fatalf("push: %+v %v", res, err)
	}
}

func (r *requeueRig) deadLetter(queue, partition, group string) int64 {
	r.t.Helper()
	ctx := context.Background()
	l := uuid.New()
	res, err := r.db.Pop(ctx, pgwire.PopRequest{Queue: queue, Partition: partition, Group: group, Lease: l, Batch: 100, SubscriptionMode: "all"})
	if err != nil || len(res.Messages) == 0 {
		r.t.Fatalf("pop: %+v %v", res, err)
	}
	var items []pgwire.AckItem
	for _, m := range res.Messages {
		items = append(items, pgwire.AckItem{TransactionID: m.Frame.TransactionID, Status: "dlq", Error: "no"})
	}
	lease := [16]byte(l)
	if _, err := r.db.Ack(ctx, tenancy.TenantID{}, res.PartitionID, group, &lease, items); err != nil {
		r.t.Fatal(err)
	}
	return res.PartitionID
}

func (r *requeueRig) last(pid int64) int64 {
	r.t.Helper()
	var n int64
	if err := r.db.Pool().QueryRow(context.Background(), `SELECT last_offset FROM queen.log_partitions WHERE id = $1`, pid).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

func (r *requeueRig) letters(pid int64) int {
	r.t.Helper()
	var n int
	if err := r.db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM queen.dead_letters WHERE partition_id = $1`, pid).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

func describe(msgs []jsonapi.Requeued) string {
	s := ""
	for _, m := range msgs {
		s += fmt.Sprintf("%s@%s/%d%v already=%v ", m.TransactionID, m.Partition, m.Offset, m.Groups, m.Already)
	}
	return s
}

// A message two groups dead-lettered is pushed once, and both dead letters
// go; without a message named, at most RequeueMax dead letters go per call,
// oldest first, and more says others are left.
func TestRequeueGathersGroupsAndPages(t *testing.T) {
	t.Parallel()
	r := newRequeueRig(t, 2)
	ctx := context.Background()
	r.push("rq", "p1", "m1")
	r.push("rq", "p2", "n1")
	p1 := r.deadLetter("rq", "p1", "g1")
	r.deadLetter("rq", "p1", "g2")
	p2 := r.deadLetter("rq", "p2", "g1")

	msgs, more, err := r.c.Requeue(ctx, tenancy.TenantID{}, jsonapi.RequeueRequest{Queue: "rq"})
	if err != nil || !more || describe(msgs) != "m1@p1/2[g1 g2] already=false " {
		t.Fatalf("first page: %s more %v %v", describe(msgs), more, err)
	}
	if msgs[0].NewTransactionID != RequeueTxID(p1, 1) || r.last(p1) != 2 || r.letters(p1) != 0 {
		t.Fatalf("p1: txid %s, last offset %d, %d dead letters", msgs[0].NewTransactionID, r.last(p1), r.letters(p1))
	}
	msgs, more, err = r.c.Requeue(ctx, tenancy.TenantID{}, jsonapi.RequeueRequest{Queue: "rq"})
	if err != nil || more || describe(msgs) != "n1@p2/2[g1] already=false " || r.letters(p2) != 0 {
		t.Fatalf("second page: %s more %v %v", describe(msgs), more, err)
	}
	// The requeued message is the original's payload under the new id.
	got, err := r.db.Pop(ctx, pgwire.PopRequest{Queue: "rq", Partition: "p1", Group: "g2", Lease: uuid.New(), Batch: 10})
	if err != nil || len(got.Messages) != 1 || got.Messages[0].Offset != 2 || string(got.Messages[0].Frame.Payload) != `{"tx":"m1"}` ||
		got.Messages[0].Frame.TransactionID != RequeueTxID(p1, 1) {
		t.Fatalf("pop after the requeue: %+v %v", got, err)
	}
	msgs, more, err = r.c.Requeue(ctx, tenancy.TenantID{}, jsonapi.RequeueRequest{Queue: "rq"})
	if err != nil || more || len(msgs) != 0 {
		t.Fatalf("nothing left: %s more %v %v", describe(msgs), more, err)
	}
}

// A message one group's requeue pushed again is not pushed a second time
// for another group's dead letter of it inside the window: that dead letter
// goes, and the answer names the first copy.
func TestRequeueAfterAnotherGroupsRequeue(t *testing.T) {
	t.Parallel()
	r := newRequeueRig(t, 0)
	ctx := context.Background()
	r.push("rq", "p", "k1", "k2")
	pid := r.deadLetter("rq", "p", "g1")
	r.deadLetter("rq", "p", "g2")

	msgs, _, err := r.c.Requeue(ctx, tenancy.TenantID{}, jsonapi.RequeueRequest{Queue: "rq", ConsumerGroup: "g1", PartitionID: pid, TransactionID: "k2"})
	if err != nil || describe(msgs) != "k2@p/3[g1] already=false " {
		t.Fatalf("g1: %s %v", describe(msgs), err)
	}
	msgs, _, err = r.c.Requeue(ctx, tenancy.TenantID{}, jsonapi.RequeueRequest{Queue: "rq", ConsumerGroup: "g2"})
	if err != nil || describe(msgs) != "k1@p/4[g2] already=false k2@p/3[g2] already=true " {
		t.Fatalf("g2: %s %v", describe(msgs), err)
	}
	if r.last(pid) != 4 || r.letters(pid) != 1 { // g1's dead letter of k1 stays
		t.Fatalf("last offset %d, %d dead letters", r.last(pid), r.letters(pid))
	}
	if _, _, err := r.c.Requeue(ctx, tenancy.TenantID{}, jsonapi.RequeueRequest{Queue: "rq", ConsumerGroup: "g2", PartitionID: pid, TransactionID: "k2"}); err != errNoDeadLetter {
		t.Fatalf("a repeat: %v", err)
	}
	if _, _, err := r.c.Requeue(ctx, tenancy.TenantID(uuid.New()), jsonapi.RequeueRequest{Queue: "rq"}); err != errQueueNotFound {
		t.Fatalf("another tenant: %v", err)
	}
}

// A dead-lettered JetStream publish is requeued with the subject and
// header block it was published with.
func TestRequeueKeepsNATSSubjectAndHeader(t *testing.T) {
	t.Parallel()
	r := newRequeueRig(t, 10)
	ctx := context.Background()
	header := []byte("NATS/1.0\r\nNats-Msg-Id: js-1\r\nX-Source: web\r\n\r\n")
	frames := []segment.Frame{{ID: uuid.Must(uuid.NewV7()), TransactionID: "js-1", Payload: []byte(`{}`), Subject: "orders.eu", Header: header}}
	if res, err := r.db.PushBundle(ctx, []segment.Write{segmentOf("rq", "eu", frames)}); err != nil || res[0].Status != segment.Queued {
		t.Fatalf("push: %+v %v", res, err)
	}
	r.deadLetter("rq", "eu", "g1")
	if msgs, _, err := r.c.Requeue(ctx, tenancy.TenantID{}, jsonapi.RequeueRequest{Queue: "rq"}); err != nil || len(msgs) != 1 {
		t.Fatalf("requeue: %s %v", describe(msgs), err)
	}
	read, err := r.db.ReadMessages(ctx, tenancy.TenantID{}, "rq", "eu", 2, 10, 1<<20)
	if err != nil || len(read) != 1 {
		t.Fatalf("read %d messages: %v", len(read), err)
	}
	if f := read[0].Frame; f.Subject != "orders.eu" || string(f.Header) != string(header) {
		t.Fatalf("requeued on %q with header %q", f.Subject, f.Header)
	}
}
