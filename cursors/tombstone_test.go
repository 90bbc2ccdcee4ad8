package cursors

import (
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testkit"
)

// A message tombstoned after its commit reached a consumer's memory is
// not delivered: the copy goes, and the read that replaces it finds the
// message gone and acknowledges it.
func TestTombstonedMessageIsNotDeliveredFromMemory(t *testing.T) {
	h := newHarness(t, nil)
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, "inbox.1")
	h.settle("C")
	h.commit(1, 3) // handed over: offset 1 to the parked pull, 2 and 3 kept in memory
	first := h.waitMsgs("inbox.1", 1)
	h.settle("C")
	h.store.mu.Lock() // the tombstone, as the Store applies it
	h.store.msgs[1] = append(h.store.msgs[1][:1:1], h.store.msgs[1][2])
	h.store.mu.Unlock()
	h.e.Deleted(tenant, 1, "tx-2")
	h.pull("C", PullRequest{Batch: 2, Expires: time.Hour}, "inbox.2")
	got := h.waitMsgs("inbox.2", 1)
	h.settle("C")
	if n := len(h.out.msgsTo("inbox.2")); n != 1 || ackRef(t, got[0]).Offset != 3 {
		t.Fatalf("%d deliveries %q, want offset 3 alone", n, got)
	}
	h.ack(first[0], AckAck, 0, "")
	h.ack(got[0], AckAck, 0, "")
	testkit.WaitFor(t, "the floor at 3", 10*time.Second, func() bool { return h.store.ackState("C", 1).Floor == 3 })
}
