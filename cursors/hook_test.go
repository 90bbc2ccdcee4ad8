package cursors

import (
	"strings"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/segment"
)

// Another bridge's commit, announced, reaches a parked request without
// waiting for the poll.
func TestAnnouncementWakesAParkedRequest(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Poll = time.Hour })
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 1, Expires: 2 * time.Hour}, "inbox.1")
	h.settle("C")
	h.add(2, 1)
	h.settle("C")
	if n := len(h.out.msgsTo("inbox.1")); n != 0 {
		t.Fatalf("an unannounced commit was found without a poll (%d)", n)
	}
	if !h.e.Listening() {
		t.Fatal("an engine with a live consumer is not listening")
	}
	h.store.mu.Lock()
	loads := h.store.partLoads
	h.store.mu.Unlock()
	h.e.Heard(tenant, "ORDERS", "us", false)
	if r := ackRef(t, h.waitMsgs("inbox.1", 1)[0]); r.PartitionID != 2 || r.Offset != 1 {
		t.Fatalf("after the announcement: %+v", r)
	}
	// The announcement named a partition the consumer knows: it was
	// found by its name, not by loading the partitions again.
	h.store.mu.Lock()
	defer h.store.mu.Unlock()
	if h.store.partLoads != loads {
		t.Fatalf("the partitions were loaded %d more times for a known partition's announcement", h.store.partLoads-loads)
	}
}

// A partition made after the consumer was loaded is found on its first
// commit.
func TestNewPartitionIsServed(t *testing.T) {
	h := newHarness(t, nil)
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, "inbox.1")
	h.settle("C")
	h.store.mu.Lock()
	h.store.parts = append(h.store.parts, PartitionState{ID: 3, Name: "asia"})
	h.store.mu.Unlock()
	h.commit(3, 1)
	m := h.waitMsgs("inbox.1", 1)[0]
	if r := ackRef(t, m); r.PartitionID != 3 || string(m.body) != "asia-1" {
		t.Fatalf("new partition: %+v %q", r, m.body)
	}
}

// Offsets retention removed, or tombstoned, are passed over and count as
// acknowledged.
func TestGoneOffsetsArePassedOver(t *testing.T) {
	h := newHarness(t, nil)
	h.add(1, 6)
	h.store.mu.Lock()
	ms := h.store.msgs[1]
	h.store.msgs[1] = append(ms[2:3:3], ms[4:]...) // 3, 5, 6: 1-2 removed, 4 tombstoned
	h.store.mu.Unlock()
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 10, NoWait: true}, "inbox.1")
	h.waitStatus("inbox.1", "404 No Messages")
	var offs []int64
	for _, p := range h.out.msgsTo("inbox.1") {
		offs = append(offs, ackRef(t, p).Offset)
	}
	if len(offs) != 3 || offs[0] != 3 || offs[1] != 5 || offs[2] != 6 {
		t.Fatalf("delivered offsets %v, want [3 5 6]", offs)
	}
	for _, p := range h.out.msgsTo("inbox.1") {
		h.ack(p, AckAck, 0, "")
	}
	testkit.WaitFor(t, "the floor at 6", 10*time.Second, func() bool { return h.store.ackState("C", 1).Floor == 6 })
}

// With no room in memory, commits are read from the store in their turn,
// after the backlog, in offset order.
func TestFullBufferReadsInOrder(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.BufferBytes = 1 })
	h.add(1, 3)
	h.create(ConsumerConfig{Durable: "C"})
	h.commit(1, 2)
	h.pull("C", PullRequest{Batch: 5, Expires: time.Hour}, "inbox.1")
	got := h.waitMsgs("inbox.1", 5)
	for i, p := range got {
		if r := ackRef(t, p); r.Offset != int64(i+1) {
			t.Fatalf("delivery %d is offset %d", i, r.Offset)
		}
	}
}

// A frame that keeps its subject and header block is delivered with them:
// the reply's @subject, and the header as published.
func TestStoredSubjectAndHeaderAreDelivered(t *testing.T) {
	h := newHarness(t, nil)
	hdr := []byte("NATS/1.0\r\nNats-Msg-Id: m1\r\nX-Trace: t\r\n\r\n")
	h.store.mu.Lock()
	h.store.msgs[1] = []StoredMsg{{Offset: 1, Frame: segment.Frame{TransactionID: "m1", Subject: "orders.eu.vip", Header: hdr, Payload: []byte(`{"a":1}`)}}}
	h.store.mu.Unlock()
	h.create(ConsumerConfig{Durable: "C", FilterSubject: "orders.eu.vip"})
	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, "inbox.1")
	m := h.waitMsgs("inbox.1", 1)[0]
	if !strings.HasSuffix(m.reply, "@orders.eu.vip") || string(m.header) != string(hdr) || string(m.body) != `{"a":1}` {
		t.Fatalf("delivered %q %q %q", m.reply, m.header, m.body)
	}
}

// An announcement of a push this bridge answered, right after its own
// commit of the partition reached the consumer, is taken as that commit;
// an announcement of anything else (a transaction's commit, which the
// commit hook never sees, or a peer's) is read at once.
func TestOnlyPushedAnnouncementsAreTakenAsCommitsHandedOver(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Poll = time.Hour })
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 10, Expires: 2 * time.Hour}, "inbox.1")
	h.settle("C") // live: the commit is handed over
	h.commit(2, 1)
	h.waitMsgs("inbox.1", 1)
	h.add(2, 1) // offset 2, committed where the hook does not see it
	h.settle("C")
	reads := h.store.nReadsOf(2)
	h.e.Heard(tenant, "ORDERS", "us", true)
	h.settle("C")
	if n, r := len(h.out.msgsTo("inbox.1")), h.store.nReadsOf(2); n != 1 || r != reads {
		t.Fatalf("a pushed announcement right after a commit handed over: %d deliveries, %d reads; want 1 and none", n, r-reads)
	}
	h.e.Heard(tenant, "ORDERS", "us", false)
	if r := ackRef(t, h.waitMsgs("inbox.1", 2)[1]); r.PartitionID != 2 || r.Offset != 2 {
		t.Fatalf("after the transaction's announcement: %+v", r)
	}
}

// A new pull request does not read the store: what it is owed was
// committed here (handed over), announced, or is found by the poll.
func TestANewPullReadsNothingUnannounced(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Poll = time.Minute })
	h.create(ConsumerConfig{Durable: "C", AckPolicy: AckNone})
	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, "inbox.1")
	h.settle("C") // live: the commit is handed over
	h.commit(1, 1)
	h.waitMsgs("inbox.1", 1)
	h.settle("C")
	reads := h.store.nReads()
	h.add(1, 1) // unannounced
	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, "inbox.2")
	h.settle("C")
	if n, r := len(h.out.msgsTo("inbox.2")), h.store.nReads(); n != 0 || r != reads {
		t.Fatalf("a new pull: %d deliveries, %d reads; want none before the poll", n, r-reads)
	}
	h.clock.Advance(time.Minute)
	if r := ackRef(t, h.waitMsgs("inbox.2", 1)[0]); r.Offset != 2 {
		t.Fatalf("the poll found %+v, want offset 2", r)
	}
}

// ownCommits says a partition's commit was handed over recently only
// within heardQuiet, and only to the same consumers: a list that changed
// since (a consumer came live or went) does not match, so a newcomer
// hears the announcement. Old entries are swept.
func TestOwnCommitsRecent(t *testing.T) {
	var o ownCommits
	a, b := &consumer{}, &consumer{}
	cs := append(make([]*consumer, 0, 2), a)
	k := partKey{tenant: tenant, queue: "ORDERS", partition: "us"}
	t0 := time.Unix(1000, 0)
	if o.recent(k, cs, t0) {
		t.Fatal("recent before any mark")
	}
	o.mark(k, cs, t0)
	if !o.recent(k, cs, t0.Add(heardQuiet-time.Millisecond)) {
		t.Fatal("not recent within heardQuiet")
	}
	if o.recent(k, cs, t0.Add(heardQuiet)) {
		t.Fatal("recent after heardQuiet")
	}
	if o.recent(partKey{tenant: tenant, queue: "ORDERS", partition: "eu"}, cs, t0) {
		t.Fatal("another partition is recent")
	}
	grown := append(cs, b) // the same array, one consumer more
	if o.recent(k, grown, t0) || o.recent(k, []*consumer{a}, t0) || o.recent(k, nil, t0) {
		t.Fatal("recent for another list of consumers")
	}
	o.mark(partKey{tenant: tenant, queue: "ORDERS", partition: "eu"}, cs, t0.Add(2*heardQuiet))
	if len(o.at) != 1 {
		t.Fatalf("%d entries after the sweep, want 1", len(o.at))
	}
}
