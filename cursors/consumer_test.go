package cursors

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/segment"
)

// An ordered consumer (ephemeral, ack none) sees a dense consumer
// sequence over partitions and over reads and commits alike.
func TestOrderedConsumerSequenceIsDense(t *testing.T) {
	h := newHarness(t, nil)
	h.add(1, 2)
	h.add(2, 2)
	h.create(ConsumerConfig{Name: "ord_1", AckPolicy: AckNone, MaxDeliver: 1, InactiveThreshold: 5 * time.Minute, MemoryStorage: true})
	h.e.Pull(tenant, "ORDERS", "ord_1", PullRequest{Batch: 100, Expires: time.Hour}, "inbox.o")
	h.waitMsgs("inbox.o", 4)
	h.commit(2, 3)
	h.commit(1, 1)
	got := h.waitMsgs("inbox.o", 8)
	for i, p := range got {
		r := ackRef(t, p)
		if r.ConsumerSeq != uint64(i+1) || r.Delivered != 1 {
			t.Fatalf("delivery %d: %+v", i, r)
		}
		h.e.Ack(tenant, r, AckNak, 0, "", "") // ack none: nothing comes back
	}
	h.clock.Advance(time.Minute)
	h.settle("ord_1")
	if n := len(h.out.msgsTo("inbox.o")); n != 8 {
		t.Fatalf("%d deliveries, want 8", n)
	}
}

// A filter delivers the subjects it matches (stored, or rebuilt from the
// stream's filter and the partition); the rest is passed over and the
// floor moves on.
func TestFilterSubjects(t *testing.T) {
	h := newHarness(t, nil)
	h.add(1, 2)
	h.add(2, 2)
	h.commit(2, 1) // no stored subject: rebuilt as orders.us
	h.commit(1, 1) // rebuilt as orders.eu
	h.create(ConsumerConfig{Durable: "C", FilterSubject: "orders.eu"})
	h.pull("C", PullRequest{Batch: 10, NoWait: true}, "inbox.f")
	h.waitStatus("inbox.f", "404 No Messages")
	got := h.out.msgsTo("inbox.f")
	if len(got) != 3 {
		t.Fatalf("filter orders.eu delivered %d messages, want 3", len(got))
	}
	for _, p := range got {
		if r := ackRef(t, p); r.PartitionID != 1 {
			t.Fatalf("filter orders.eu delivered %q", p.reply)
		}
	}
	testkit.WaitFor(t, "the floor moved over us", 10*time.Second, func() bool { return h.store.ackState("C", 2).Floor == 3 })

	_, err := h.e.CreateConsumer(t.Context(), tenant, "ORDERS", ConsumerConfig{Durable: "X", FilterSubject: "audit.>"}, "")
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Code != codeFilterSubset {
		t.Fatalf("a filter outside the stream: %v", err)
	}
}

func TestRebuildSubject(t *testing.T) {
	cases := []struct {
		filters   []string
		partition string
		want      string
	}{
		{[]string{"orders.>"}, "eu.42", "orders.eu.42"},
		{[]string{"audit.*.events"}, "eu", "audit.eu.events"},
		{[]string{"audit.*.events"}, "eu.x", ""},
		{[]string{"orders"}, "Default", "orders"},
		{[]string{"orders"}, "eu", ""},
		{[]string{"a.>", "b.>"}, "x", ""}, // ambiguous
	}
	for _, c := range cases {
		if got := rebuildSubject(c.filters, c.partition); got != c.want {
			t.Errorf("rebuildSubject(%v, %q) = %q, want %q", c.filters, c.partition, got, c.want)
		}
	}
}

// By start sequence needs a filter pinning one partition: sequences are
// partition offsets.
func TestByStartSequenceNeedsOnePartition(t *testing.T) {
	h := newHarness(t, nil)
	_, err := h.e.CreateConsumer(t.Context(), tenant, "ORDERS", ConsumerConfig{Durable: "S", DeliverPolicy: DeliverByStartSequence, OptStartSeq: 3}, "")
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("by_start_sequence on the whole stream: %v", err)
	}
	if _, err := h.e.CreateConsumer(t.Context(), tenant, "ORDERS", ConsumerConfig{Durable: "S", DeliverPolicy: DeliverByStartSequence, OptStartSeq: 3, FilterSubject: "orders.eu"}, ""); err != nil {
		t.Fatal(err)
	}
	if got := h.store.consumers["S"].Start; got.Policy != "by_start_sequence" || got.PartitionID != 1 || got.Offset != 3 {
		t.Fatalf("start %+v, want partition eu (1) from offset 3", got)
	}
}

// A consumer loaded again (a restart) delivers what was not acknowledged,
// once ack_wait has passed from the load (its acknowledgement may still
// come, as on JetStream), and never what was.
func TestLoadDeliversWhatWasNotAcknowledged(t *testing.T) {
	h := newHarness(t, nil)
	h.add(1, 3)
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 3, Expires: time.Hour}, "inbox.1")
	got := h.waitMsgs("inbox.1", 3)
	h.ack(got[1], AckAck, 0, "reply")
	testkit.WaitFor(t, "the ack stored", 10*time.Second, func() bool { return len(h.out.to("reply")) == 1 })
	if err := h.e.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	e2, err := NewEngine(Config{Store: h.store, Deliverer: h.out, Clock: h.clock, Streams: h.e.cfg.Streams})
	h.e = testkit.Started(t, e2, err)
	h.pull("C", PullRequest{Batch: 3, Expires: time.Hour}, "inbox.2")
	h.settle("C")
	if n := len(h.out.msgsTo("inbox.2")); n != 0 {
		t.Fatalf("after a restart, before ack_wait passed: %d deliveries", n)
	}
	h.clock.Advance(30 * time.Second) // the default ack_wait
	again := h.waitMsgs("inbox.2", 2)
	h.settle("C")
	if n := len(h.out.msgsTo("inbox.2")); n != 2 || ackRef(t, again[0]).Offset != 1 || ackRef(t, again[1]).Offset != 3 {
		t.Fatalf("after a restart: %d deliveries %q", n, again)
	}
	// The old delivery's ack still counts.
	h.ack(got[0], AckAck, 0, "")
	h.ack(again[1], AckAck, 0, "")
	testkit.WaitFor(t, "the floor at 3", 10*time.Second, func() bool { return h.store.ackState("C", 1).Floor == 3 })
}

func TestInactiveConsumerIsDeleted(t *testing.T) {
	h := newHarness(t, nil)
	h.create(ConsumerConfig{Name: "eph", InactiveThreshold: 5 * time.Second})
	h.settle("eph")
	h.clock.Advance(5 * time.Second)
	testkit.WaitFor(t, "the consumer deleted", 10*time.Second, func() bool {
		_, err := h.store.GetConsumer(t.Context(), tenant, "ORDERS", "eph")
		return errors.Is(err, ErrConsumerMissing)
	})
	h.pull("eph", PullRequest{}, "inbox")
	h.waitStatus("inbox", "503")
}

// fakeForwarder records forwards; mu guards calls.
type fakeForwarder struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeForwarder) ForwardPull(owner string, _ tenancy.TenantID, _, name string, _ PullRequest, inbox string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "pull "+owner+" "+name+" "+inbox)
	return nil
}

func (f *fakeForwarder) ForwardAck(owner string, _ tenancy.TenantID, ack AckRef, _ AckKind, _ time.Duration, _, reply string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "ack "+owner+" "+ack.Consumer+" "+reply)
	return nil
}

func (f *fakeForwarder) ForwardChanged(owner string, _ tenancy.TenantID, _, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "changed "+owner+" "+name)
	return nil
}

func TestAnotherBridgesConsumerIsForwarded(t *testing.T) {
	owner := func(tenancy.TenantID, string, string) (bool, string) { return false, "b2" }
	h := newHarness(t, func(c *Config) { c.Owner = owner })
	if err := h.e.Pull(tenant, "ORDERS", "C", PullRequest{}, "inbox"); err != (ErrNotOwner{ID: "b2"}) {
		t.Fatalf("pull without a forwarder: %v", err)
	}
	// A forwarded pull reaching a bridge that no longer owns the consumer
	// is not forwarded again: its client hears 409 and pulls again.
	if err := h.e.PullForwarded(tenant, "ORDERS", "C", PullRequest{}, "inbox.fw"); err != (ErrNotOwner{ID: "b2"}) {
		t.Fatalf("forwarded pull to a bridge that is not the owner: %v", err)
	}
	h.waitStatus("inbox.fw", "409 Leadership Change")
	fw := &fakeForwarder{}
	h2 := newHarness(t, func(c *Config) { c.Owner = owner; c.Forwarder = fw })
	h2.create(ConsumerConfig{Durable: "C"})
	if err := h2.e.Pull(tenant, "ORDERS", "C", PullRequest{}, "inbox"); err != nil {
		t.Fatal(err)
	}
	h2.e.Ack(tenant, AckRef{PartitionID: 1, Stream: "ORDERS", Consumer: "C", Offset: 1}, AckAck, 0, "", "r")
	want := []string{"changed b2 C", "pull b2 C inbox", "ack b2 C r"}
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if len(fw.calls) != 3 || fw.calls[0] != want[0] || fw.calls[1] != want[1] || fw.calls[2] != want[2] {
		t.Fatalf("forwards %q, want %q", fw.calls, want)
	}
}

func TestConsumerInfoCounts(t *testing.T) {
	h := newHarness(t, nil)
	h.add(1, 4)
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 2, Expires: time.Hour}, "inbox.1")
	h.waitMsgs("inbox.1", 2)
	h.pull("C", PullRequest{Batch: 5, Expires: time.Hour}, "inbox.2")
	h.waitMsgs("inbox.2", 2)
	h.settle("C")
	in, err := h.e.ConsumerInfo(context.Background(), tenant, "ORDERS", "C")
	if err != nil {
		t.Fatal(err)
	}
	if in.NumAckPending != 4 || in.NumWaiting != 1 || in.Delivered.Consumer != 4 || in.Delivered.Stream != 4 || in.NumPending != 0 || in.Config.AckWait != 30*time.Second {
		t.Fatalf("info: %+v", in)
	}
}

// A consumer whose ownership moved to another bridge leaves this one:
// its parked requests hear 409 Leadership Change and pull again there.
func TestOwnershipMoveHandsOff(t *testing.T) {
	var moved atomic.Bool
	owner := func(tenancy.TenantID, string, string) (bool, string) {
		if moved.Load() {
			return false, "b2"
		}
		return true, ""
	}
	h := newHarness(t, func(c *Config) { c.Owner = owner })
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, "inbox.1")
	h.settle("C")
	moved.Store(true)
	h.clock.Advance(time.Second) // the poll: a pass
	h.waitStatus("inbox.1", "409 Leadership Change")
	if err := h.e.Pull(tenant, "ORDERS", "C", PullRequest{}, "inbox.2"); err != (ErrNotOwner{ID: "b2"}) {
		t.Fatalf("pull after the move: %v", err)
	}
	if n := h.e.Stats().Consumers; n != 0 {
		t.Fatalf("%d consumers live after the move", n)
	}
}

// A deleted queue takes its consumers with it: parked requests hear 409
// Consumer Deleted.
func TestDroppedQueueStopsItsConsumers(t *testing.T) {
	h := newHarness(t, nil)
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, "inbox.1")
	h.settle("C")
	h.e.Dropped(tenant, "ORDERS")
	h.waitStatus("inbox.1", "409 Consumer Deleted")
	if n := h.e.Stats().Consumers; n != 0 {
		t.Fatalf("%d consumers live after the drop", n)
	}
}

// An ephemeral consumer created on another bridge is made live on its
// owner when told, so that its inactivity is timed there.
func TestChangedEphemeralIsTimedOnTheOwner(t *testing.T) {
	h := newHarness(t, nil)
	h.store.PutConsumer(t.Context(), StoredConsumer{Queue: "ORDERS", Name: "eph", Config: encodeConfig(ConsumerConfig{Name: "eph"}.withDefaults())}, "")
	if err := h.e.ConsumerChanged(t.Context(), tenant, "ORDERS", "eph"); err != nil {
		t.Fatal(err)
	}
	h.settle("eph")
	h.clock.Advance(defaultEphemeralIdle)
	testkit.WaitFor(t, "the idle consumer deleted", 10*time.Second, func() bool {
		_, err := h.store.GetConsumer(t.Context(), tenant, "ORDERS", "eph")
		return errors.Is(err, ErrConsumerMissing)
	})
}

// Info counts, as pending, messages committed where this bridge's memory
// has not heard of them (another bridge's commit): their PubAck came
// before the request, as JetStream's NumPending does.
func TestInfoCountsWhatTheStoreHolds(t *testing.T) {
	h := newHarness(t, nil)
	h.add(1, 1)
	h.create(ConsumerConfig{Durable: "C"})
	h.pull("C", PullRequest{Batch: 1, Expires: time.Hour}, "inbox.1")
	h.waitMsgs("inbox.1", 1)
	h.settle("C")
	h.add(1, 3)
	in, err := h.e.ConsumerInfo(context.Background(), tenant, "ORDERS", "C")
	if err != nil {
		t.Fatal(err)
	}
	if in.NumPending != 3 || in.NumAckPending != 1 {
		t.Fatalf("info after three commits not announced here: pending %d ack pending %d, want 3 and 1", in.NumPending, in.NumAckPending)
	}
}

// A consumer's reads of what this bridge committed after the consumer was
// created come from the hot tail: no read of the Store.
func TestReadsComeFromTheHotTail(t *testing.T) {
	tail := NewTail(1 << 20)
	h := newHarness(t, func(c *Config) { c.Tail = tail })
	h.create(ConsumerConfig{Durable: "C"}) // the tail keeps ORDERS from now on
	h.add(1, 3)
	frames := make([]segment.Frame, 3)
	for i := range frames {
		frames[i] = segment.Frame{TransactionID: fmt.Sprint("tx-", i+1), Payload: fmt.Appendf(nil, "eu-%d", i+1)}
	}
	tail.Committed([]segment.Write{{Tenant: tenant, Queue: "ORDERS", Partition: "eu", Count: 3,
		Hashes: segment.AppendHashes(nil, frames), Blob: segment.Pack(nil, frames)}},
		[]segment.Result{{Status: segment.Queued, PartitionID: 1, BaseOffset: 1, CreatedAt: h.clock.Now()}})
	h.pull("C", PullRequest{Batch: 3, Expires: time.Hour}, "inbox")
	got := h.waitMsgs("inbox", 3)
	for i, m := range got {
		if string(m.body) != fmt.Sprintf("eu-%d", i+1) {
			t.Fatalf("message %d: %q", i, m.body)
		}
	}
	if n := h.store.nReadsOf(1); n != 0 {
		t.Fatalf("%d reads of partition 1 from the Store, want none: the tail held its messages", n)
	}
}
