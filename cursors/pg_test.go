package cursors

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

// The engine's tests run over fakes, except these, which hold it to
// pgwire.DB: the definitions, the reads, the fused ack writes and a
// restart over real PostgreSQL.

// pgPush commits n messages on partition (subject orders.<partition>.x,
// with a header) and returns the write and its result, as fusion hands
// them to the commit hook.
func pgPush(t *testing.T, db *pgwire.DB, partition string, n int) ([]segment.Write, []segment.Result) {
	t.Helper()
	frames := make([]segment.Frame, n)
	for i := range frames {
		tx := fmt.Sprintf("%s-%s", partition, uuid.NewString())
		frames[i] = segment.Frame{ID: uuid.Must(uuid.NewV7()), TransactionID: tx, Payload: []byte(fmt.Sprintf(`{"tx":%q}`, tx)),
			Subject: "orders." + partition + ".x", Header: []byte("NATS/1.0\r\nNats-Msg-Id: " + tx + "\r\n\r\n")}
	}
	w := []segment.Write{{Queue: "ORDERS", Partition: partition, Count: int32(n), Hashes: segment.AppendHashes(nil, frames), Blob: segment.Pack(nil, frames)}}
	res, err := db.PushBundle(context.Background(), w)
	if err != nil || res[0].Status != segment.Queued {
		t.Fatalf("push: %v %+v", err, res)
	}
	return w, res
}

func pgEngine(t *testing.T, db *pgwire.DB, out *fakeDeliverer, clock ...Clock) *JSEngine {
	t.Helper()
	cfg := Config{Store: db, Deliverer: out, Streams: map[string][]string{"ORDERS": {"orders.>"}}}
	if len(clock) > 0 {
		cfg.Clock = clock[0]
	}
	e, err := NewEngine(cfg)
	return testkit.Started(t, e, err)
}

func TestEngineOverPostgres(t *testing.T) {
	db := testkit.OpenDB(t, testenv.NewDatabase(t), 8)
	out := &fakeDeliverer{}
	h := &harness{t: t, out: out, e: pgEngine(t, db, out)}
	pgPush(t, db, "eu", 3)
	h.create(ConsumerConfig{Durable: "C", AckWait: time.Hour})
	h.pull("C", PullRequest{Batch: 3, Expires: time.Hour}, "inbox.1")
	got := h.waitMsgs("inbox.1", 3)
	for i, p := range got {
		r := ackRef(t, p)
		if r.Offset != int64(i+1) || !strings.HasSuffix(p.reply, "@orders.eu.x") || p.headerValue("Nats-Msg-Id") == "" {
			t.Fatalf("delivery %d: %+v %q", i, r, p.reply)
		}
		if !strings.HasPrefix(string(p.body), `{"tx":"eu-`) {
			t.Fatalf("delivery %d: body %q", i, p.body)
		}
	}
	h.ack(got[0], AckAck, 0, "reply.1")
	h.ack(got[2], AckAck, 0, "reply.3")
	testkit.WaitFor(t, "the double acks answered", time.Minute, func() bool { return len(out.to("reply.1")) == 1 && len(out.to("reply.3")) == 1 })
	def, err := db.GetConsumer(context.Background(), tenant, "ORDERS", "C")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := db.ConsumerPartitions(context.Background(), def.ID)
	if err != nil || len(ps) != 1 || ps[0].Floor != 1 || len(ps[0].Acked) != 1 || ps[0].Acked[0] != 3 {
		t.Fatalf("stored after the double acks: %+v %v", ps, err)
	}

	// A restart: offset 2 was handed out and not acknowledged, and its
	// acknowledgement may still come, so the partition waits ack_wait from
	// the load (on a clock moved by hand), then hands it again as its
	// second delivery; the acknowledged ones never come back.
	if err := h.e.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock()
	h.e = pgEngine(t, db, out, clock)
	h.pull("C", PullRequest{Batch: 3, NoWait: true}, "inbox.2")
	h.waitStatus("inbox.2", "404 No Messages")
	if n := len(out.msgsTo("inbox.2")); n != 0 {
		t.Fatalf("after a restart, before ack_wait passed: %d deliveries", n)
	}
	clock.Advance(time.Hour)
	h.pull("C", PullRequest{Batch: 3, NoWait: true}, "inbox.2b")
	h.waitStatus("inbox.2b", "404 No Messages")
	again := h.out.msgsTo("inbox.2b")
	if n := len(again); n != 1 || ackRef(t, again[0]).Offset != 2 || ackRef(t, again[0]).Delivered != 2 {
		t.Fatalf("after a restart and ack_wait: %d deliveries, %q", n, again)
	}

	// A commit of this bridge reaches the parked request from memory.
	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, "inbox.3")
	h.settle("C")
	h.e.Committed(pgPush(t, db, "eu", 1))
	if r := ackRef(t, h.waitMsgs("inbox.3", 1)[0]); r.Offset != 4 {
		t.Fatalf("the commit: %+v", r)
	}
	h.ack(again[0], AckAck, 0, "")
	h.ack(out.msgsTo("inbox.3")[0], AckAck, 0, "reply.4")
	testkit.WaitFor(t, "the last double ack", time.Minute, func() bool { return len(out.to("reply.4")) == 1 })
	ps, _ = db.ConsumerPartitions(context.Background(), def.ID)
	if ps[0].Floor != 4 || len(ps[0].Acked) != 0 {
		t.Fatalf("at the end: %+v", ps)
	}
}
