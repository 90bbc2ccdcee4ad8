package cursors

import (
	"sync"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testkit"
)

// deliverOne creates consumer C (cfg), stores one message on eu, and
// pulls it on inbox.
func deliverOne(h *harness, cfg ConsumerConfig, inbox string) published {
	h.t.Helper()
	h.add(1, 1)
	cfg.Durable = "C"
	h.create(cfg)
	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, inbox)
	return h.waitMsgs(inbox, 1)[0]
}

// redelivered pulls again and returns the next delivery.
func (h *harness) redelivered(inbox string) AckRef {
	h.t.Helper()
	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, inbox)
	return ackRef(h.t, h.waitMsgs(inbox, 1)[0])
}

// nothingFor asserts that a parked request of inbox got nothing after a
// whole pass of the consumer.
func (h *harness) nothingFor(inbox string) {
	h.t.Helper()
	h.settle("C")
	if got := h.out.to(inbox); len(got) != 0 {
		h.t.Fatalf("%s got %d sends, want none yet: %q", inbox, len(got), got)
	}
}

func TestAckWaitRedeliversWithItsCount(t *testing.T) {
	h := newHarness(t, nil)
	first := deliverOne(h, ConsumerConfig{AckWait: 30 * time.Second}, "inbox.1")
	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, "inbox.2")
	h.clock.Advance(29 * time.Second)
	h.nothingFor("inbox.2")
	h.clock.Advance(time.Second)
	again := ackRef(t, h.waitMsgs("inbox.2", 1)[0])
	if again.Offset != ackRef(t, first).Offset || again.Delivered != 2 || again.ConsumerSeq != 2 {
		t.Fatalf("redelivery: %+v", again)
	}
	if h.e.Stats().Redeliveries != 1 {
		t.Fatalf("redeliveries counted %d", h.e.Stats().Redeliveries)
	}
	// The count of a message delivered twice is stored, so max_deliver
	// outlives the bridge.
	testkit.WaitFor(t, "the delivery count stored", 10*time.Second, func() bool { return h.store.ackState("C", 1).Deliveries[1] == 2 })
}

func TestBackoffSetsTheDeadlineByDeliveryCount(t *testing.T) {
	h := newHarness(t, nil)
	deliverOne(h, ConsumerConfig{BackOff: []time.Duration{time.Second, 5 * time.Second}, MaxDeliver: 5}, "inbox.1")
	h.clock.Advance(time.Second)
	if r := h.redelivered("inbox.2"); r.Delivered != 2 {
		t.Fatalf("after the first step: %+v", r)
	}
	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, "inbox.3")
	h.clock.Advance(4 * time.Second)
	h.nothingFor("inbox.3")
	h.clock.Advance(time.Second)
	if r := ackRef(t, h.waitMsgs("inbox.3", 1)[0]); r.Delivered != 3 {
		t.Fatalf("after the second step: %+v", r)
	}
}

func TestNakRedeliversAtOnceOrAfterItsDelay(t *testing.T) {
	h := newHarness(t, nil)
	m := deliverOne(h, ConsumerConfig{}, "inbox.1")
	h.ack(m, AckNak, 0, "")
	if r := h.redelivered("inbox.2"); r.Delivered != 2 {
		t.Fatalf("after -NAK: %+v", r)
	}
	h.ack(h.out.msgsTo("inbox.2")[0], AckNak, 3*time.Second, "")
	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, "inbox.3")
	h.clock.Advance(2 * time.Second)
	h.nothingFor("inbox.3")
	h.clock.Advance(time.Second)
	if r := ackRef(t, h.waitMsgs("inbox.3", 1)[0]); r.Delivered != 3 {
		t.Fatalf("after -NAK with delay: %+v", r)
	}
}

func TestProgressExtendsTheAckDeadline(t *testing.T) {
	h := newHarness(t, nil)
	m := deliverOne(h, ConsumerConfig{AckWait: 10 * time.Second}, "inbox.1")
	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, "inbox.2")
	h.clock.Advance(8 * time.Second)
	h.ack(m, AckProgress, 0, "")
	h.clock.Advance(8 * time.Second) // 16 s after delivery, 8 after +WPI
	h.nothingFor("inbox.2")
	h.clock.Advance(2 * time.Second)
	if r := ackRef(t, h.waitMsgs("inbox.2", 1)[0]); r.Delivered != 2 {
		t.Fatalf("after +WPI and ack_wait: %+v", r)
	}
}

func TestTermSendsToTheDeadLettersAndNeverAgain(t *testing.T) {
	h := newHarness(t, nil)
	m := deliverOne(h, ConsumerConfig{AckWait: time.Second}, "inbox.1")
	h.e.Ack(tenant, ackRef(t, m), AckTerm, 0, "bad order", "")
	testkit.WaitFor(t, "the dead letter stored", 10*time.Second, func() bool {
		st := h.store.ackState("C", 1)
		return st.Floor == 1 && len(st.Dead) == 1 && st.Dead[0] == DeadLetter{Offset: 1, TransactionID: "tx-1", Error: "bad order", Deliveries: 1}
	})
	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, "inbox.2")
	h.clock.Advance(time.Minute)
	h.nothingFor("inbox.2")
}

func TestMaxDeliverSendsToTheDeadLetters(t *testing.T) {
	h := newHarness(t, nil)
	deliverOne(h, ConsumerConfig{AckWait: time.Second, MaxDeliver: 2}, "inbox.1")
	h.clock.Advance(time.Second)
	if r := h.redelivered("inbox.2"); r.Delivered != 2 {
		t.Fatalf("second delivery: %+v", r)
	}
	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, "inbox.3")
	h.clock.Advance(time.Second)
	testkit.WaitFor(t, "the dead letter stored", 10*time.Second, func() bool {
		st := h.store.ackState("C", 1)
		return st.Floor == 1 && len(st.Dead) == 1 && st.Dead[0] == DeadLetter{Offset: 1, TransactionID: "tx-1", Error: "max_deliver", Deliveries: 2}
	})
	h.nothingFor("inbox.3")
}

func TestMaxAckPendingHoldsDeliveriesUntilAcks(t *testing.T) {
	h := newHarness(t, nil)
	h.add(1, 5)
	h.create(ConsumerConfig{Durable: "C", MaxAckPending: 2})
	h.pull("C", PullRequest{Batch: 5, Expires: time.Hour}, "inbox.1")
	got := h.waitMsgs("inbox.1", 2)
	h.settle("C")
	if n := len(h.out.msgsTo("inbox.1")); n != 2 {
		t.Fatalf("max_ack_pending 2 let %d out", n)
	}
	h.ack(got[0], AckAck, 0, "")
	got = h.waitMsgs("inbox.1", 3)
	if r := ackRef(t, got[2]); r.Offset != 3 {
		t.Fatalf("after one ack: %+v", r)
	}
	h.settle("C")
	if n := len(h.out.msgsTo("inbox.1")); n != 3 {
		t.Fatalf("one ack let %d out in all", n)
	}
}

// Acks that free room under max_ack_pending wake the consumer once a
// 32nd of it is free (at most 64; one below 64), not for every message;
// a NAK always does.
func TestAcksWakeTheConsumerForABatchOfRoom(t *testing.T) {
	for _, tc := range []struct {
		maxAckPending, pendingAfter, before int
		kind                                AckKind
		want                                bool
	}{
		{64, 63, 0, AckAck, false}, // room 1 of the 2 a pass waits for
		{64, 62, 1, AckAck, true},  // room 2: a pass
		{64, 61, 2, AckAck, false}, // room was already enough: the pass is under way
		{64, 63, 0, AckNak, true},  // a NAK's redelivery
		{1000, 970, 29, AckAck, false},
		{1000, 969, 30, AckAck, true},   // 1000/32 = 31
		{10000, 9936, 63, AckAck, true}, // at most 64
		{2, 1, 0, AckAck, true},         // below 64: every ack
		{-1, 5, 1 << 30, AckAck, false}, // no limit: room never lacked
	} {
		c := &consumer{cfg: ConsumerConfig{AckPolicy: AckExplicit, MaxAckPending: tc.maxAckPending}, ackPending: tc.pendingAfter}
		if got := c.ackWakes(tc.kind, tc.before); got != tc.want {
			t.Errorf("max_ack_pending %d, room %d → %d, kind %v: wakes %v, want %v", tc.maxAckPending, tc.before, c.room(), tc.kind, got, tc.want)
		}
	}
}

// A consumer at max_ack_pending gets its deliveries back once acks free
// a batch of room, in offset order, and a new pull fills whatever room
// there is.
func TestAcksAtMaxAckPendingResumeDeliveries(t *testing.T) {
	h := newHarness(t, nil)
	h.add(1, 200)
	h.create(ConsumerConfig{Durable: "C", MaxAckPending: 64, AckWait: time.Hour})
	h.pull("C", PullRequest{Batch: 100, Expires: time.Hour}, "inbox.1")
	got := h.waitMsgs("inbox.1", 64)
	for _, p := range got[:3] {
		h.ack(p, AckAck, 0, "")
	}
	h.waitMsgs("inbox.1", 66)
	h.settle("C")
	if n := len(h.out.msgsTo("inbox.1")); n != 67 {
		t.Fatalf("three acks let %d out in all, want 67", n)
	}
	got = h.out.msgsTo("inbox.1")
	for i, p := range got[64:] {
		if r := ackRef(t, p); r.Offset != int64(65+i) {
			t.Fatalf("delivery %d after the acks: offset %d", 65+i, r.Offset)
		}
	}
	// One more ack: room for one, no pass; a new pull's pass fills it,
	// for the request parked first.
	h.ack(got[3], AckAck, 0, "")
	h.pull("C", PullRequest{Batch: 10, Expires: time.Hour}, "inbox.2")
	if got := h.waitMsgs("inbox.1", 68); ackRef(t, got[67]).Offset != 68 {
		t.Fatalf("after the new pull inbox.1 got offset %d, want 68", ackRef(t, got[67]).Offset)
	}
}

// An explicit ack acknowledges that message only; the floor moves over
// the acknowledged run.
func TestExplicitAckAcknowledgesThatMessageOnly(t *testing.T) {
	h := newHarness(t, nil)
	h.add(1, 3)
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 3, Expires: time.Hour}, "inbox.1")
	got := h.waitMsgs("inbox.1", 3)
	h.ack(got[2], AckAck, 0, "")
	testkit.WaitFor(t, "offset 3 stored", 10*time.Second, func() bool {
		st := h.store.ackState("C", 1)
		return st.Floor == 0 && len(st.Acked) == 1 && st.Acked[0] == 3
	})
	h.ack(got[0], AckAck, 0, "")
	h.ack(got[1], AckAck, 0, "")
	testkit.WaitFor(t, "the floor at 3", 10*time.Second, func() bool {
		st := h.store.ackState("C", 1)
		return st.Floor == 3 && len(st.Acked) == 0
	})
}

func TestAckAllMovesTheFloorToTheOffset(t *testing.T) {
	h := newHarness(t, nil)
	h.add(1, 3)
	h.create(ConsumerConfig{Durable: "C", AckPolicy: AckAll, AckWait: time.Second})
	h.pull("C", PullRequest{Batch: 3, Expires: time.Hour}, "inbox.1")
	got := h.waitMsgs("inbox.1", 3)
	h.ack(got[1], AckAck, 0, "")
	testkit.WaitFor(t, "the floor at 2", 10*time.Second, func() bool { return h.store.ackState("C", 1).Floor == 2 })
	h.pull("C", PullRequest{Batch: 3, Expires: time.Hour}, "inbox.2")
	h.clock.Advance(time.Second)
	if r := ackRef(t, h.waitMsgs("inbox.2", 1)[0]); r.Offset != 3 {
		t.Fatalf("after ack all of 2, redelivered %+v", r)
	}
	h.settle("C")
	if n := len(h.out.msgsTo("inbox.2")); n != 1 {
		t.Fatalf("%d redeliveries after ack all", n)
	}
}

func TestAckNoneAcknowledgesOnDelivery(t *testing.T) {
	h := newHarness(t, nil)
	h.add(1, 2)
	h.create(ConsumerConfig{Durable: "C", AckPolicy: AckNone})
	h.pull("C", PullRequest{Batch: 2, Expires: time.Hour}, "inbox.1")
	h.waitMsgs("inbox.1", 2)
	testkit.WaitFor(t, "the floor at 2", 10*time.Second, func() bool { return h.store.ackState("C", 1).Floor == 2 })
	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, "inbox.2")
	h.clock.Advance(time.Hour - time.Second)
	h.nothingFor("inbox.2")
}

// A double ack is answered only after CommitAcks returned.
func TestDoubleAckAnsweredAfterTheCommit(t *testing.T) {
	h := newHarness(t, nil)
	m := deliverOne(h, ConsumerConfig{}, "inbox.1")
	gate := make(chan struct{})
	var open sync.Once
	release := func() { open.Do(func() { close(gate) }) }
	t.Cleanup(release) // before the engine's Stop, which flushes
	h.store.mu.Lock()
	h.store.gate = gate
	h.store.mu.Unlock()
	h.ack(m, AckAck, 0, "reply.1")
	<-h.store.entered
	if got := h.out.to("reply.1"); len(got) != 0 {
		t.Fatalf("double ack answered before its commit returned: %q", got)
	}
	release()
	testkit.WaitFor(t, "the double ack answered", 10*time.Second, func() bool { return len(h.out.to("reply.1")) == 1 })
	if got := h.out.to("reply.1")[0]; len(got.body) != 0 || got.header != nil {
		t.Fatalf("double ack answer: %q", got)
	}
	if h.store.ackState("C", 1).Floor != 1 {
		t.Fatal("answered, but the ack is not stored")
	}
}

// Acks of many consumers and partitions go in one CommitAcks, sorted in
// the lock order.
func TestAcksAreFusedIntoOneCommit(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.FlushWindow = time.Hour; c.FlushMax = 4 })
	h.add(1, 5)
	h.add(2, 5)
	for _, name := range []string{"C", "D"} {
		h.create(ConsumerConfig{Durable: name})
		if err := h.e.Pull(tenant, "ORDERS", name, PullRequest{Batch: 10, Expires: time.Hour}, "inbox."+name); err != nil {
			t.Fatal(err)
		}
	}
	c, d := h.waitMsgs("inbox.C", 10), h.waitMsgs("inbox.D", 10)
	// The deliveries' counts (four pairs) filled one batch of their own.
	testkit.WaitFor(t, "the deliveries' commit", 10*time.Second, func() bool { return h.store.nCommits() == 1 })
	var last published
	for _, p := range append(c, d...) {
		r := ackRef(t, p)
		if r.Consumer == "D" && r.PartitionID == 2 && r.Offset == 5 {
			last = p // the fourth pair's one ack comes last: it fills the batch
			continue
		}
		if r.Consumer == "D" && r.PartitionID == 2 {
			continue
		}
		h.ack(p, AckAck, 0, "")
	}
	if h.store.nCommits() != 1 {
		t.Fatalf("%d commits of acks before the batch filled", h.store.nCommits()-1)
	}
	h.ack(last, AckAck, 0, "")
	testkit.WaitFor(t, "one commit of the acks", 10*time.Second, func() bool { return h.store.nCommits() == 2 })
	h.store.mu.Lock()
	ups := h.store.commits[1]
	h.store.mu.Unlock()
	if len(ups) != 4 {
		t.Fatalf("one commit of %d updates, want 4", len(ups))
	}
	for i := 1; i < len(ups); i++ {
		a, b := ups[i-1], ups[i]
		if a.PartitionID > b.PartitionID || a.PartitionID == b.PartitionID && a.ConsumerID >= b.ConsumerID {
			t.Fatalf("updates not in the lock order: %+v before %+v", a, b)
		}
	}
	if st := h.store.ackState("C", 1); st.Floor != 5 {
		t.Fatalf("C on eu: %+v", st)
	}
	if st := h.store.ackState("D", 2); st.Floor != 0 || len(st.Acked) != 1 || st.Acked[0] != 5 {
		t.Fatalf("D on us: %+v", st)
	}
}

// Plain acknowledgements and delivery marks wait for the lazy window; a
// double ack ends it, and everything gathered goes in one write before
// the double ack is answered.
func TestPlainAcksWaitForALazyWrite(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.LazyWindow = time.Hour })
	h.add(1, 3)
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 3, Expires: time.Hour}, "inbox")
	got := h.waitMsgs("inbox", 3)
	h.ack(got[0], AckAck, 0, "")
	h.ack(got[1], AckAck, 0, "")
	h.settle("C")
	if n := h.store.nCommits(); n != 0 {
		t.Fatalf("%d writes before the lazy window ended or a double ack came, want 0", n)
	}
	h.ack(got[2], AckAck, 0, "reply")
	testkit.WaitFor(t, "the double ack answered", 10*time.Second, func() bool { return len(h.out.to("reply")) == 1 })
	if n, st := h.store.nCommits(), h.store.ackState("C", 1); n != 1 || st.Floor != 3 || st.Delivered != 3 {
		t.Fatalf("%d writes, stored floor %d delivered %d; want one write with floor 3 and delivered 3", n, st.Floor, st.Delivered)
	}
}

// A double ack's window is not cut by the reply that started it: the
// write comes FlushWindow later, so double acks arriving meanwhile share
// it.
func TestDoubleAckWaitsItsWindow(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.FlushWindow, c.LazyWindow = 3*time.Second, 3*time.Second })
	h.add(1, 2)
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 2, Expires: time.Hour}, "inbox")
	got := h.waitMsgs("inbox", 2)
	// The deliveries' marks are written first; then the flusher is idle.
	testkit.WaitFor(t, "the deliveries' write", 10*time.Second, func() bool { return h.store.nCommits() == 1 })
	<-h.store.entered
	h.ack(got[0], AckAck, 0, "r1")
	// Well inside the 3 s window no write may start (a window cut by its
	// own reply writes at once).
	select {
	case <-h.store.entered:
		t.Fatal("the double ack's write started at once: its reply cut its window")
	case <-time.After(time.Second):
	}
	h.ack(got[1], AckAck, 0, "r2")
	testkit.WaitFor(t, "both double acks answered", 10*time.Second, func() bool {
		return len(h.out.to("r1")) == 1 && len(h.out.to("r2")) == 1
	})
	if n := h.store.nCommits(); n != 2 {
		t.Fatalf("%d writes, want 2: the deliveries', then one for both double acks", n)
	}
}
