package cursors

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// A batch spans partitions, each partition in offset order, the consumer
// sequence dense, the reply the 12-token ack subject then @subject.
func TestPullDeliversABatchAcrossPartitions(t *testing.T) {
	h := newHarness(t, nil)
	h.add(1, 3)
	h.add(2, 2)
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 4, Expires: time.Minute}, "inbox.1")
	got := h.waitMsgs("inbox.1", 4)
	last := map[int64]int64{}
	parts := map[int64]bool{}
	for i, p := range got {
		r := ackRef(t, p)
		if r.ConsumerSeq != uint64(i+1) || r.Delivered != 1 || r.Stream != "ORDERS" || r.Consumer != "C" {
			t.Fatalf("delivery %d: %+v", i, r)
		}
		if r.Offset <= last[r.PartitionID] {
			t.Fatalf("partition %d out of order: %d after %d", r.PartitionID, r.Offset, last[r.PartitionID])
		}
		last[r.PartitionID] = r.Offset
		parts[r.PartitionID] = true
		name := map[int64]string{1: "eu", 2: "us"}[r.PartitionID]
		if !strings.HasSuffix(p.reply, "@orders."+name) || string(p.body) != fmt.Sprintf("%s-%d", name, r.Offset) {
			t.Fatalf("delivery %d: reply %q body %q", i, p.reply, p.body)
		}
	}
	if len(parts) != 2 {
		t.Fatalf("a batch of 4 over 3+2 messages took partitions %v", parts)
	}
	h.settle("C")
	if n := len(h.out.msgsTo("inbox.1")); n != 4 {
		t.Fatalf("batch of 4 got %d messages", n)
	}
}

func TestNoWaitAnswers404AtTheEnd(t *testing.T) {
	h := newHarness(t, nil)
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 5, NoWait: true}, "inbox.empty")
	h.waitStatus("inbox.empty", "404 No Messages")

	h.add(1, 1)
	h.pull("C", PullRequest{Batch: 5, NoWait: true}, "inbox.one")
	h.waitStatus("inbox.one", "404 No Messages")
	all := h.out.to("inbox.one")
	if len(all) != 2 || all[0].status() != "" {
		t.Fatalf("no_wait with one message: want the message then 404, got %d sends: %q", len(all), all)
	}
}

func TestExpiryAnswers408WithPendingHeaders(t *testing.T) {
	h := newHarness(t, nil)
	h.add(1, 1)
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 5, MaxBytes: 1000, Expires: 10 * time.Second}, "inbox.x")
	m := h.waitMsgs("inbox.x", 1)[0]
	h.settle("C")
	if got := h.out.to("inbox.x"); len(got) != 1 {
		t.Fatalf("before expiry: %d sends", len(got))
	}
	h.clock.Advance(10 * time.Second)
	st := h.waitStatus("inbox.x", "408 Request Timeout")
	size := len(m.body) + len(m.header) + len("orders.eu") + 64
	if st.headerValue("Nats-Pending-Messages") != "4" || st.headerValue("Nats-Pending-Bytes") != fmt.Sprint(1000-size) {
		t.Fatalf("408 headers: %q", st.header)
	}
}

func TestIdleHeartbeat(t *testing.T) {
	h := newHarness(t, nil)
	h.add(1, 1)
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 2, Expires: 30 * time.Second, Heartbeat: 5 * time.Second}, "inbox.hb")
	h.waitMsgs("inbox.hb", 1)
	h.clock.Advance(5 * time.Second)
	hb := h.waitStatus("inbox.hb", "100 Idle Heartbeat")
	if hb.headerValue("Nats-Last-Consumer") != "1" || hb.headerValue("Nats-Last-Stream") != "1" {
		t.Fatalf("heartbeat headers: %q", hb.header)
	}
}

// A request whose inbox lost interest is dropped, never handed a message,
// whether the loss is heard (LS-) or seen at delivery.
func TestInterestLostDropsTheRequest(t *testing.T) {
	h := newHarness(t, nil)
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 1, Expires: time.Minute}, "inbox.gone")
	h.settle("C")
	h.out.loseInterest("inbox.gone")
	testkit.WaitFor(t, "the request dropped", 10*time.Second, func() bool { return h.e.Stats().Parked == 0 })
	h.pull("C", PullRequest{Batch: 1, Expires: time.Minute}, "inbox.live")
	h.commit(1, 1)
	h.waitMsgs("inbox.live", 1)
	if got := h.out.to("inbox.gone"); len(got) != 0 {
		t.Fatalf("a request that lost interest got %d messages", len(got))
	}
	if h.e.Stats().InterestLost != 1 {
		t.Fatalf("interest lost counted %d", h.e.Stats().InterestLost)
	}
}

// Commits of this bridge go to a parked request from memory.
func TestCommitHookDeliversWithoutReading(t *testing.T) {
	h := newHarness(t, nil)
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 3, Expires: time.Minute}, "inbox.hot")
	h.settle("C")
	reads := h.store.nReads()
	h.commit(2, 3)
	got := h.waitMsgs("inbox.hot", 3)
	if n := h.store.nReads(); n != reads {
		t.Fatalf("a commit of this bridge was read from the store (%d reads, %d before)", n, reads)
	}
	if !strings.HasSuffix(got[2].reply, "@orders.us") || string(got[2].body) != "us-3" {
		t.Fatalf("third delivery: reply %q body %q", got[2].reply, got[2].body)
	}
}

func TestMaxBytesAndBatchCompleted(t *testing.T) {
	h := newHarness(t, nil)
	h.add(1, 3)
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 5, MaxBytes: 10, Expires: time.Minute}, "inbox.small")
	h.waitStatus("inbox.small", "409 Message Size Exceeds MaxBytes")
	h.pull("C", PullRequest{Batch: 1, MaxBytes: 1000, Expires: time.Minute}, "inbox.big")
	st := h.waitStatus("inbox.big", "409 Batch Completed")
	if h.out.msgsTo("inbox.big") == nil || st.headerValue("Nats-Pending-Messages") != "0" {
		t.Fatalf("batch completed: %q", st.header)
	}
}

func TestMaxWaitingAnswers409(t *testing.T) {
	h := newHarness(t, nil)
	h.create(ConsumerConfig{Durable: "C", MaxWaiting: 1})
	h.pull("C", PullRequest{Batch: 1, Expires: time.Minute}, "inbox.a")
	h.pull("C", PullRequest{Batch: 1, Expires: time.Minute}, "inbox.b")
	h.waitStatus("inbox.b", "409 Exceeded MaxWaiting")
}

func TestStopAnswers408AndDeleteAnswers409(t *testing.T) {
	h := newHarness(t, nil)
	h.create(ConsumerConfig{Durable: "C"})
	h.create(ConsumerConfig{Durable: "D"})
	h.pull("C", PullRequest{Batch: 3, MaxBytes: 500, Expires: time.Minute}, "inbox.c")
	h.pull("D", PullRequest{Batch: 3, Expires: time.Minute}, "inbox.d")
	h.settle("C")
	h.settle("D")
	if err := h.e.DeleteConsumer(t.Context(), tenant, "ORDERS", "D"); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("inbox.d", "409 Consumer Deleted")
	h.pull("D", PullRequest{}, "inbox.d2")
	h.waitStatus("inbox.d2", "503")
	if err := h.e.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	st := h.waitStatus("inbox.c", "408 Request Timeout")
	if st.headerValue("Nats-Pending-Messages") != "3" || st.headerValue("Nats-Pending-Bytes") != "500" {
		t.Fatalf("408 at stop: %q", st.header)
	}
}

// An inbox whose interest has not reached the leaf yet gets nothing until
// it has; past the grace it counts as gone.
func TestInterestNotYetHeard(t *testing.T) {
	h := newHarness(t, nil)
	h.create(ConsumerConfig{Durable: "C"})
	h.out.mu.Lock()
	h.out.uninterst = map[string]bool{"inbox.late": true, "inbox.never": true}
	h.out.mu.Unlock()
	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, "inbox.late")
	h.commit(1, 1)
	h.settle("C")
	if got := h.out.to("inbox.late"); len(got) != 0 {
		t.Fatalf("delivered before the inbox's interest was heard: %q", got)
	}
	h.out.mu.Lock()
	delete(h.out.uninterst, "inbox.late")
	h.out.mu.Unlock()
	h.clock.Advance(interestRecheck)
	h.waitMsgs("inbox.late", 1)

	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, "inbox.never")
	h.settle("C")
	h.clock.Advance(interestGrace)
	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, "inbox.other")
	h.commit(1, 1)
	h.waitMsgs("inbox.other", 1)
	if got := h.out.to("inbox.never"); len(got) != 0 {
		t.Fatalf("an inbox with no interest got %q", got)
	}
	if n := h.e.Stats().InterestLost; n != 1 {
		t.Fatalf("interest lost counted %d", n)
	}
}

// The last subscription of a wildcard going drops the requests of the
// inboxes it matched that have no interest left.
func TestWildcardInterestLost(t *testing.T) {
	h := newHarness(t, nil)
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, "_INBOX.a.1")
	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, "_INBOX.b.1")
	h.settle("C")
	h.out.mu.Lock()
	h.out.uninterst = map[string]bool{"_INBOX.a.1": true}
	h.out.mu.Unlock()
	h.out.loseInterest("_INBOX.*.1") // a.1 has none left, b.1 still has
	testkit.WaitFor(t, "one request dropped", 10*time.Second, func() bool { return h.e.Stats().Parked == 1 })
	h.commit(1, 1)
	h.waitMsgs("_INBOX.b.1", 1)
	if got := h.out.to("_INBOX.a.1"); len(got) != 0 {
		t.Fatalf("a dropped request got %q", got)
	}
}

// Deliveries, statuses and double-ack answers go over the consumer's
// tenant's connection (its account), never another's.
func TestDeliveriesNameTheirTenant(t *testing.T) {
	h := newHarness(t, nil)
	other := tenancy.TenantID{1}
	h.add(1, 1)
	if _, err := h.e.CreateConsumer(t.Context(), other, "ORDERS", ConsumerConfig{Durable: "T"}, ""); err != nil {
		t.Fatal(err)
	}
	if err := h.e.Pull(other, "ORDERS", "T", PullRequest{Batch: 2, NoWait: true}, "inbox.t"); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("inbox.t", "404 No Messages")
	m := h.out.msgsTo("inbox.t")[0]
	h.e.Ack(other, ackRef(t, m), AckAck, 0, "", "reply.t")
	testkit.WaitFor(t, "the double ack answered", 10*time.Second, func() bool { return len(h.out.to("reply.t")) == 1 })
	for _, subject := range []string{"inbox.t", "reply.t"} {
		for _, p := range h.out.to(subject) {
			if p.tenant != other {
				t.Fatalf("%s went to tenant %v", subject, p.tenant)
			}
		}
	}
}

// A no_wait request finds what was committed before it even when no
// commit hook or announcement told the consumer: a partition made after
// the consumer was loaded, and more messages in a partition it knows.
func TestNoWaitLooksAtTheStore(t *testing.T) {
	h := newHarness(t, nil)
	h.add(1, 1)
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 5, NoWait: true}, "inbox.1")
	h.waitStatus("inbox.1", "404 No Messages")
	if n := len(h.out.msgsTo("inbox.1")); n != 1 {
		t.Fatalf("first no_wait: %d messages, want 1", n)
	}
	h.store.mu.Lock()
	h.store.parts = append(h.store.parts, PartitionState{ID: 3, Name: "ap"})
	h.store.mu.Unlock()
	h.add(3, 2)
	h.add(1, 1)
	h.pull("C", PullRequest{Batch: 5, NoWait: true}, "inbox.2")
	h.waitStatus("inbox.2", "404 No Messages")
	got := map[int64][]int64{}
	for _, p := range h.out.msgsTo("inbox.2") {
		r := ackRef(t, p)
		got[r.PartitionID] = append(got[r.PartitionID], r.Offset)
	}
	if len(got[1]) != 1 || got[1][0] != 2 || len(got[3]) != 2 {
		t.Fatalf("second no_wait delivered %v, want offset 2 of partition 1 and offsets 1-2 of partition 3", got)
	}
}

// A no_wait request whose inbox the hub has not reported interest in yet
// is not ended with 404 before anything was looked for on its behalf:
// once the interest is heard it gets what is there, then its 404.
func TestNoWaitWaitsForItsInterest(t *testing.T) {
	h := newHarness(t, nil)
	h.add(1, 2)
	h.create(ConsumerConfig{Durable: "C"})
	h.out.mu.Lock()
	h.out.uninterst = map[string]bool{"inbox": true}
	h.out.mu.Unlock()
	h.pull("C", PullRequest{Batch: 10, NoWait: true}, "inbox")
	h.settle("C")
	if sent := h.out.to("inbox"); len(sent) != 0 {
		t.Fatalf("before the interest was heard: %d sent to the inbox, the first %q", len(sent), sent[0].status())
	}
	h.out.mu.Lock()
	delete(h.out.uninterst, "inbox")
	h.out.mu.Unlock()
	h.clock.Advance(interestRecheck)
	h.waitMsgs("inbox", 2)
	h.waitStatus("inbox", "404")
}
