package cursors

import (
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testkit"
)

// A +TERM of an offset the consumer no longer holds in memory (delivered
// before a restart) stores its dead letter with the message's
// transactionId, read from the Store.
func TestTermOfAnUnheldOffsetNamesItsTransaction(t *testing.T) {
	h := newHarness(t, nil)
	h.add(1, 3)
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 3, Expires: time.Hour}, "inbox.1")
	got := h.waitMsgs("inbox.1", 3)
	if err := h.e.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	e2, err := NewEngine(Config{Store: h.store, Deliverer: h.out, Clock: h.clock, Streams: h.e.cfg.Streams})
	h.e = testkit.Started(t, e2, err)
	h.e.Ack(tenant, ackRef(t, got[1]), AckTerm, 0, "bad order", "")
	testkit.WaitFor(t, "the dead letter stored", 10*time.Second, func() bool { return len(h.store.ackState("C", 1).Dead) == 1 })
	if d := h.store.ackState("C", 1).Dead[0]; d.Offset != 2 || d.TransactionID != "tx-2" || d.Error != "bad order" {
		t.Fatalf("dead letter %+v, want offset 2 of tx-2, bad order", d)
	}
}
