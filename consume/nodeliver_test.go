package consume

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/cursors"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

// keyedPayloads stands for a bridge's keys: refuse, when set, is what
// Sealed answers for every queue (a key the bridge lacks); a payload
// `"sealed-under-2"` does not open.
type keyedPayloads struct {
	sealed bool
	refuse error
}

func (k keyedPayloads) Plain(_ tenancy.TenantID, _, _ string, _ uint8, stored []byte) ([]byte, error) {
	if string(stored) == `"sealed-under-2"` {
		return nil, errors.New("sealed with a key id that is not configured (2)")
	}
	return stored, nil
}

func (k keyedPayloads) Sealed(context.Context, tenancy.TenantID, string) (bool, error) {
	return k.sealed, k.refuse
}

// pushed is the tenant segmentOf's writes belong to.
var pushed tenancy.TenantID

// noDeliveryRig is a queue "q" with partition "p" holding payloads in
// PostgreSQL, and consumers over it with the payloads each test needs.
type noDeliveryRig struct {
	t   *testing.T
	ctx context.Context
	db  *pgwire.DB
}

func newNoDeliveryRig(t *testing.T, payloads ...string) *noDeliveryRig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	db := testkit.OpenDB(t, testenv.NewDatabase(t), 4)
	frames := make([]segment.Frame, len(payloads))
	for i, p := range payloads {
		frames[i] = segment.Frame{ID: uuid.Must(uuid.NewV7()), TransactionID: fmt.Sprint("tx", i+1), Payload: []byte(p)}
	}
	if res, err := db.PushBundle(ctx, []segment.Write{segmentOf("q", "p", frames)}); err != nil || res[0].Status != segment.Queued {
		t.Fatalf("push: %+v, %v", res, err)
	}
	return &noDeliveryRig{t: t, ctx: ctx, db: db}
}

func (r *noDeliveryRig) consumer(p Payloads) *Consumer {
	r.t.Helper()
	reads, marks := startSides(r.t, r.db)
	c, err := New(Config{DB: r.db, Reads: reads, Marks: marks, Payloads: p})
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

// cursor is the group's cursor on "p" and whether a lease holds it; no
// row: 0, false.
func (r *noDeliveryRig) cursor(group string) (int64, bool) {
	r.t.Helper()
	var cursor int64
	var leased bool
	err := r.db.Pool().QueryRow(r.ctx, `SELECT c.cursor_offset, c.lease_id IS NOT NULL AND c.lease_expires_at > now()
		FROM queen.consumer_cursors c JOIN queen.log_partitions p ON p.id = c.partition_id
		WHERE p.name = 'p' AND c.consumer_group = $1`, group).Scan(&cursor, &leased)
	if err != nil && !strings.Contains(err.Error(), "no rows") {
		r.t.Fatal(err)
	}
	return cursor, leased
}

// popAll pops with a consumer that opens everything and answers the
// transactionIds delivered.
func (r *noDeliveryRig) popAll(req jsonapi.PopRequest) []string {
	r.t.Helper()
	req.Batch = 10
	status, body := r.consumer(plainPayloads{}).ServePop(r.ctx, pushed, req, 0)
	if status != jsonapi.StatusOK {
		r.t.Fatalf("the pop after: %d %s", status, body)
	}
	var txs []string
	for _, m := range decode[popAnswer](r.t, body).Messages {
		txs = append(txs, m.TransactionID)
	}
	return txs
}

// A bridge that does not hold the key a queue is sealed under refuses its
// pops before claiming: nothing is leased, no cursor moves, and a bridge
// with the key then delivers everything.
func TestPopWithoutTheQueuesKeyClaimsNothing(t *testing.T) {
	t.Parallel()
	r := newNoDeliveryRig(t, `{"n":1}`, `{"n":2}`)
	missing := keyedPayloads{sealed: true, refuse: errors.New(`queue "q" is sealed under key id 2 and this bridge does not hold the key`)}
	c := r.consumer(missing)
	for _, req := range []jsonapi.PopRequest{
		{Queue: "q", Partition: "p", ConsumerGroup: "g"},
		{Queue: "q", ConsumerGroup: "g", AutoAck: true},
		{Queue: "q", ConsumerGroup: "g", Batch: 5},
	} {
		status, body := c.ServePop(r.ctx, pushed, req, 0)
		says := decode[struct{ Error string }](t, body).Error
		if status != jsonapi.StatusServiceUnavailable || !strings.Contains(says, `queue "q"`) || !strings.Contains(says, "key id 2") {
			t.Errorf("pop %+v: %d %s; want 503 naming the queue and key id 2", req, status, body)
		}
	}
	if cursor, leased := r.cursor("g"); cursor != 0 || leased {
		t.Fatalf("after refused pops the cursor is %d, leased %v", cursor, leased)
	}
	if got := r.popAll(jsonapi.PopRequest{Queue: "q", ConsumerGroup: "g"}); strings.Join(got, ",") != "tx1,tx2" {
		t.Fatalf("a bridge with the key delivers %v", got)
	}
}

// A payload that does not open after the claim releases the claim in the
// same request: the answer names the queue, partition, offset and key id,
// the lease is gone and no attempt is counted, and the next pop (on a
// bridge that opens it) delivers the whole batch at once, not after the
// lease time.
func TestUndecryptablePayloadReleasesTheClaim(t *testing.T) {
	t.Parallel()
	r := newNoDeliveryRig(t, `{"n":1}`, `"sealed-under-2"`, `{"n":3}`)
	c := r.consumer(keyedPayloads{sealed: true})
	for _, req := range []jsonapi.PopRequest{
		{Queue: "q", Partition: "p", ConsumerGroup: "g", Batch: 10},
		{Queue: "q", ConsumerGroup: "g", Batch: 10},
	} {
		status, body := c.ServePop(r.ctx, pushed, req, 0)
		says := decode[struct{ Error string }](t, body).Error
		for _, want := range []string{`queue "q"`, `partition "p"`, "offset 2", "(2)"} {
			if status != jsonapi.StatusInternalServerError || !strings.Contains(says, want) {
				t.Errorf("pop %+v: %d %s; want 500 saying %s", req, status, body, want)
			}
		}
		if cursor, leased := r.cursor("g"); cursor != 0 || leased {
			t.Fatalf("after the failed pop the cursor is %d, leased %v: the claim was kept", cursor, leased)
		}
	}
	var retries int64
	if err := r.db.Pool().QueryRow(r.ctx, `SELECT retry_count FROM queen.consumer_cursors WHERE consumer_group = 'g'`).Scan(&retries); err != nil || retries != 0 {
		t.Errorf("retry count %d (%v) after releases; a release counts no attempt", retries, err)
	}
	if got := r.popAll(jsonapi.PopRequest{Queue: "q", ConsumerGroup: "g"}); strings.Join(got, ",") != "tx1,tx2,tx3" {
		t.Fatalf("the next pop delivers %v", got)
	}
}

// An auto-ack pop of a queue whose payloads may be sealed moves the cursor
// only once its answer is rendered: a payload that does not open consumes
// nothing; when every payload opens, the answer has no lease and the
// cursor is past the batch, with nothing left leased.
func TestAutoAckOfSealedQueueConsumesOnlyWhatIsAnswered(t *testing.T) {
	t.Parallel()
	r := newNoDeliveryRig(t, `{"n":1}`, `"sealed-under-2"`)
	c := r.consumer(keyedPayloads{sealed: true})
	status, body := c.ServePop(r.ctx, pushed, jsonapi.PopRequest{Queue: "q", Partition: "p", Batch: 10, AutoAck: true}, 0)
	if status != jsonapi.StatusInternalServerError {
		t.Fatalf("%d %s; want 500", status, body)
	}
	group := jsonapi.QueueModeGroup
	if cursor, leased := r.cursor(group); cursor != 0 || leased {
		t.Fatalf("after an auto-ack pop that answered nothing the cursor is %d, leased %v", cursor, leased)
	}
	if got := r.popAll(jsonapi.PopRequest{Queue: "q", Partition: "p", AutoAck: true}); strings.Join(got, ",") != "tx1,tx2" {
		t.Fatalf("a bridge that opens them delivers %v", got)
	}

	ok := newNoDeliveryRig(t, `{"n":1}`, `{"n":2}`)
	c = ok.consumer(keyedPayloads{sealed: true})
	status, body = c.ServePop(ok.ctx, pushed, jsonapi.PopRequest{Queue: "q", Batch: 10, AutoAck: true}, 0)
	a := decode[popAnswer](t, body)
	if status != jsonapi.StatusOK || len(a.Messages) != 2 || a.LeaseID != "" || a.Messages[0].LeaseID != "" {
		t.Fatalf("%d %s; want both messages without a lease", status, body)
	}
	if cursor, leased := ok.cursor(group); cursor != 2 || leased {
		t.Fatalf("after the answered auto-ack pop the cursor is %d, leased %v", cursor, leased)
	}
	if status, body := c.ServePop(ok.ctx, pushed, jsonapi.PopRequest{Queue: "q", Partition: "p", Batch: 10, AutoAck: true}, 0); status != jsonapi.StatusNoContent {
		t.Fatalf("a pop after the auto-ack: %d %s", status, body)
	}
}

// An auto-ack pop of a sealed queue over two partitions whose second
// acknowledgement fails answers the first partition only: what it answers
// is acknowledged, what it leaves out stays leased (delivered again when
// the lease ends), and both claims were made under the pop's lease.
func TestAutoAckOfSealedQueueAnswersOnlyWhatWasAcknowledged(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.c.cfg.Payloads = keyedPayloads{sealed: true}
	r.marks.cands = []cursors.Candidate{{ID: 1, Name: "a"}, {ID: 2, Name: "b"}}
	r.store.popByID[1] = delivers(1, "a", 2, 10)
	r.store.popByID[2] = delivers(2, "b", 1, 10)
	r.store.ack = func(pid int64, items []pgwire.AckItem) (pgwire.AckResult, error) {
		if pid == 2 {
			return pgwire.AckResult{}, errors.New("connection reset")
		}
		return pgwire.AckResult{Errs: make([]string, len(items)), DLQ: make([]bool, len(items)), Queue: "q", Partition: "a", Released: true}, nil
	}
	status, body := r.c.ServePop(context.Background(), tenant, jsonapi.PopRequest{Queue: "q", Batch: 5, Partitions: 2, AutoAck: true}, 0)
	a := decode[popAnswer](t, body)
	var txs []string
	for _, m := range a.Messages {
		txs = append(txs, m.TransactionID)
		if m.LeaseID != "" {
			t.Errorf("an auto-ack answer names lease %s", m.LeaseID)
		}
	}
	if status != jsonapi.StatusOK || strings.Join(txs, ",") != "a-1,a-2" || a.LeaseID != "" {
		t.Fatalf("%d %s; want a-1 and a-2 alone, without a lease", status, body)
	}
	claims := r.store.popCalls()
	if len(claims) != 2 || claims[0].AutoAck || claims[1].AutoAck || claims[0].Lease == ([16]byte{}) || claims[0].Lease != claims[1].Lease {
		t.Fatalf("claims %+v; want both under one lease", claims)
	}
	r.store.mu.Lock()
	defer r.store.mu.Unlock()
	if len(r.store.acks) != 2 {
		t.Fatalf("%d acknowledgement calls; want one per partition", len(r.store.acks))
	}
	for _, call := range r.store.acks {
		if *call.lease != claims[0].Lease || call.items[0].Status != string(Completed) {
			t.Errorf("acknowledgement %+v; want completed under the pop's lease", call)
		}
	}
}
