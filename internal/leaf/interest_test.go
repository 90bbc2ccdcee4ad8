package leaf_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// Interested follows the hub's subscriptions: true once a client
// subscribes, false once it unsubscribes, and OnInterestLost names the
// subject then; a subject with a second subscriber, or one a wildcard
// still matches, keeps its interest and is not reported.
func TestInterestFollowsSubscriptions(t *testing.T) {
	h := startHub(t)
	c := h.dial(t)
	var lost lostLog
	c.OnInterestLost(lost.add)
	nc := h.natsClient(t)

	if c.Interested("_INBOX.pull") {
		t.Fatal("interest in _INBOX.pull before anyone subscribed")
	}
	sub, err := nc.SubscribeSync("_INBOX.pull")
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "interest in _INBOX.pull", 30*time.Second, func() bool { return c.Interested("_INBOX.pull") })
	if c.Interested("_INBOX.pull.more") || c.Interested("_INBOX") {
		t.Fatal("a literal subscription matches other subjects")
	}
	if err := sub.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "OnInterestLost(_INBOX.pull)", 30*time.Second, func() bool { return lost.has("_INBOX.pull") })
	if c.Interested("_INBOX.pull") {
		t.Fatal("still interested after the only subscriber left")
	}

	// Two subscribers on one subject: the first leaving changes nothing.
	a, _ := nc.SubscribeSync("two")
	b, _ := nc.SubscribeSync("two")
	testkit.WaitFor(t, "interest in two", 30*time.Second, func() bool { return c.Interested("two") })
	if err := a.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	// A marker subscription made and dropped after the unsubscribe: once
	// its loss is reported, the hub has sent everything before it.
	marker(t, nc, &lost, "marker.1")
	if !c.Interested("two") || lost.has("two") {
		t.Fatal("interest in two lost while a subscriber is left")
	}
	if err := b.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "OnInterestLost(two)", 30*time.Second, func() bool { return lost.has("two") })

	// A wildcard: a literal subject it matches has interest; the literal
	// subscription on it leaving is no loss while the wildcard stays;
	// the wildcard leaving is reported by its own subject.
	w, _ := nc.SubscribeSync("legacy.*")
	l, _ := nc.SubscribeSync("legacy.req1")
	testkit.WaitFor(t, "interest in legacy.req1", 30*time.Second, func() bool { return c.Interested("legacy.req1") })
	if !c.Interested("legacy.req2") || c.Interested("legacy.req2.x") {
		t.Fatal("legacy.* does not match as a wildcard")
	}
	if err := l.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	marker(t, nc, &lost, "marker.2")
	if lost.has("legacy.req1") || !c.Interested("legacy.req1") {
		t.Fatal("legacy.req1 reported lost while legacy.* matches it")
	}
	if err := w.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "OnInterestLost(legacy.*)", 30*time.Second, func() bool { return lost.has("legacy.*") })
	if c.Interested("legacy.req2") {
		t.Fatal("interest in legacy.req2 after legacy.* went")
	}
}

// marker subscribes to subject and unsubscribes, and waits until the
// leaf reports the loss: everything the hub announced before has arrived.
func marker(t *testing.T, nc *nats.Conn, lost *lostLog, subject string) {
	t.Helper()
	m, err := nc.SubscribeSync(subject)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "OnInterestLost("+subject+")", 30*time.Second, func() bool { return lost.has(subject) })
}

// A subject with queue subscribers only: Interested says so, and a
// message reaches one member of the group (the hub hands a leaf's message
// to a queue group only when the message names the group).
func TestQueueSubscribersReceive(t *testing.T) {
	h := startHub(t)
	c := h.dial(t)
	var lost lostLog
	c.OnInterestLost(lost.add)
	nc := h.natsClient(t)
	got := make(chan *nats.Msg, 10)
	q1, err := nc.ChanQueueSubscribe("work.a", "workers", got)
	if err != nil {
		t.Fatal(err)
	}
	q2, err := nc.ChanQueueSubscribe("work.*", "others", got)
	if err != nil {
		t.Fatal(err)
	}
	// Both groups must be known to the leaf before the publish: a message
	// names only the groups the leaf has heard of. work.b is matched by
	// work.* alone.
	testkit.WaitFor(t, "interest in work.a and work.*", 30*time.Second, func() bool {
		return c.Interested("work.a") && c.Interested("work.b")
	})
	if err := c.Publish("work.a", "", nil, []byte("job")); err != nil {
		t.Fatal(err)
	}
	// One copy per group.
	for range 2 {
		if m := receive(t, got); string(m.Data) != "job" {
			t.Fatalf("got %q", m.Data)
		}
	}
	if err := q1.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	marker(t, nc, &lost, "marker.q")
	if !c.Interested("work.a") || lost.has("work.a") {
		t.Fatal("work.a lost its interest while work.* (queue others) matches it")
	}
	if err := q2.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "no interest in work.a", 30*time.Second, func() bool { return !c.Interested("work.a") })
}
