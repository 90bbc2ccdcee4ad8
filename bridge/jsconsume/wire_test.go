package jsconsume_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// JetStream pull consumers read the stream ORDERS alike from a real
// JetStream server and from the bridge: every case runs against both, with
// the same expectations. Where the bridge documents a difference
// (docs/jetstream.md, "Consuming": a sequence is the offset in a partition,
// a subject's partition is served to one puller of a consumer at a time),
// the case says so in a branch of its own.
func TestJetStreamConsumerWire(t *testing.T) {
	bin := bridgeBinary(t)
	for _, tg := range []*consumeTarget{realJetStreamOrders(t), bridgeOrders(t, bin)} {
		t.Run(tg.name, func(t *testing.T) {
			for _, cc := range consumeCases {
				t.Run(cc.name, func(t *testing.T) { cc.run(t, newConsumeCase(t, tg)) })
			}
		})
	}
}

var consumeCases = []struct {
	name string
	run  func(t *testing.T, c *consumeCase)
}{
	{"create durable pull consumer", consumeCreate},
	{"fetch", consumeFetch},
	{"fetch no wait", consumeFetchNoWait},
	{"next", consumeNext},
	{"idle heartbeats keep a waiting fetch", consumeHeartbeats},
	{"consume", consumeConsume},
	{"messages", consumeMessages},
	{"two consumers share a durable", consumeShared},
	{"nak", consumeNak},
	{"nak with delay", consumeNakWithDelay},
	{"ack wait expiry redelivers", consumeAckWaitExpiry},
	{"in progress extends the ack wait", consumeInProgress},
	{"term", consumeTerm},
	{"double ack", consumeDoubleAck},
	{"filter one subject", consumeFilterOne},
	{"filter several subjects", consumeFilterSeveral},
	{"deliver all", consumeDeliverAll},
	{"deliver new", consumeDeliverNew},
	{"deliver last", consumeDeliverLast},
	{"deliver last per subject", consumeDeliverLastPerSubject},
	{"deliver by start time", consumeDeliverByStartTime},
	{"deliver by start sequence", consumeDeliverByStartSequence},
	{"ordered consumer", consumeOrdered},
	{"delete", consumeDelete},
	{"metadata", consumeMetadata},
	{"headers and subject round trip", consumeHeadersAndSubject},
}

// A durable pull consumer is created with the configuration asked for
// (defaults filled in), found by name and listed; the same configuration
// again is the same consumer, another one under its name is refused, an
// update of a missing one is refused, and a missing one is not found. Its
// info counts what its filter matches.
func consumeCreate(t *testing.T, c *consumeCase) {
	cons := c.durable(t, "d", js.ConsumerConfig{})
	ci := cons.CachedInfo()
	if ci.Stream != ordersStream || ci.Name != c.name("d") || ci.Config.Durable != c.name("d") || ci.Config.FilterSubject != c.all() ||
		ci.Config.AckPolicy != js.AckExplicitPolicy || ci.Config.DeliverPolicy != js.DeliverAllPolicy || ci.Config.AckWait != 30*time.Second {
		t.Fatalf("created: %+v", ci)
	}
	s, err := c.js.Stream(c.ctx, ordersStream)
	if err != nil {
		t.Fatalf("stream info: %v", err)
	}
	if sc := s.CachedInfo().Config; sc.Name != ordersStream || !slices.Equal(sc.Subjects, []string{ordersFilter}) {
		t.Fatalf("stream config: %+v", sc)
	}
	found, err := c.js.Consumer(c.ctx, ordersStream, c.name("d"))
	if err != nil || found.CachedInfo().Name != c.name("d") {
		t.Fatalf("lookup: %v", err)
	}
	if again := c.durable(t, "d", js.ConsumerConfig{}); again.CachedInfo().Name != c.name("d") {
		t.Fatalf("created again: %+v", again.CachedInfo())
	}
	_, err = c.js.CreateConsumer(c.ctx, ordersStream, js.ConsumerConfig{Durable: c.name("d"), FilterSubject: c.all(), AckWait: 10 * time.Second})
	if !errors.Is(err, js.ErrConsumerExists) {
		t.Fatalf("another configuration under the name: %v, want %v", err, js.ErrConsumerExists)
	}
	_, err = c.js.UpdateConsumer(c.ctx, ordersStream, js.ConsumerConfig{Durable: c.name("none"), FilterSubject: c.all()})
	if !errors.Is(err, js.ErrConsumerDoesNotExist) {
		t.Fatalf("update of a missing consumer: %v, want %v", err, js.ErrConsumerDoesNotExist)
	}
	if _, err := c.js.Consumer(c.ctx, ordersStream, c.name("none")); !errors.Is(err, js.ErrConsumerNotFound) {
		t.Fatalf("lookup of a missing consumer: %v, want %v", err, js.ErrConsumerNotFound)
	}
	c.publish(t, c.subject("a"), "p1")
	c.publish(t, c.subject("a"), "p2")
	c.publish(t, c.subject("b"), "p3")
	if ci := c.infoAfterPublishes(t, cons, 3); ci.NumPending != 3 || ci.NumAckPending != 0 || ci.NumRedelivered != 0 {
		t.Fatalf("info after three publishes: pending %d ack pending %d redelivered %d", ci.NumPending, ci.NumAckPending, ci.NumRedelivered)
	}
	if listed := c.consumerNames(t); !slices.Contains(listed, c.name("d")) {
		t.Fatalf("consumer names %v lack %s", listed, c.name("d"))
	}
}

// Fetch hands at most its batch, in order, and ends empty (no error) when
// its wait runs out with nothing left.
func consumeFetch(t *testing.T, c *consumeCase) {
	cons := c.durable(t, "f", js.ConsumerConfig{})
	for _, id := range []string{"f1", "f2", "f3"} {
		c.publish(t, c.subject("a"), id)
	}
	first := fetch(t, cons, 2, 5*time.Second)
	wantIDs(t, first, "f1", "f2")
	ackAll(t, c.ctx, first)
	rest := fetch(t, cons, 5, time.Second)
	wantIDs(t, rest, "f3")
	ackAll(t, c.ctx, rest)
	if got := fetch(t, cons, 5, 500*time.Millisecond); len(got) != 0 {
		t.Fatalf("an empty consumer fetched %v", ids(t, got))
	}
}

// FetchNoWait hands what is there and ends at once; with nothing there it
// ends empty without an error.
func consumeFetchNoWait(t *testing.T, c *consumeCase) {
	cons := c.durable(t, "nw", js.ConsumerConfig{})
	c.publish(t, c.subject("a"), "w1")
	c.publish(t, c.subject("a"), "w2")
	b, err := cons.FetchNoWait(10)
	if err != nil {
		t.Fatal(err)
	}
	got := drain(t, b)
	wantIDs(t, got, "w1", "w2")
	ackAll(t, c.ctx, got)
	wantNothing(t, cons)
}

// Next hands one message; on an empty consumer it times out; a Next that
// waits (the default 30 s, with heartbeats) is handed a message published
// while it waits.
func consumeNext(t *testing.T, c *consumeCase) {
	cons := c.durable(t, "n", js.ConsumerConfig{})
	c.publish(t, c.subject("a"), "n1")
	m, err := cons.Next(js.FetchMaxWait(10 * time.Second))
	if err != nil || idOf(t, m) != "n1" {
		t.Fatalf("next: %v", err)
	}
	ackAll(t, c.ctx, []js.Msg{m})
	if _, err := cons.Next(js.FetchMaxWait(time.Second)); !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("next on an empty consumer: %v, want %v", err, nats.ErrTimeout)
	}
	type next struct {
		m   js.Msg
		err error
	}
	done := make(chan next, 1)
	go func() { // ends with Next, at the latest when its 30 s expire
		m, err := cons.Next()
		done <- next{m, err}
	}()
	c.publish(t, c.subject("a"), "n2")
	select {
	case r := <-done:
		if r.err != nil || idOf(t, r.m) != "n2" {
			t.Fatalf("a waiting next: %v", r.err)
		}
		ackAll(t, c.ctx, []js.Msg{r.m})
	case <-c.ctx.Done():
		t.Fatal("a waiting next got nothing")
	}
}

// A fetch that asks for idle heartbeats and waits on an empty consumer
// ends at its expiry without an error: the server sent the heartbeats
// (without them nats.go ends it with ErrNoHeartbeat after two missed).
// Then a message published while it waits is handed.
func consumeHeartbeats(t *testing.T, c *consumeCase) {
	cons := c.durable(t, "hb", js.ConsumerConfig{})
	b, err := cons.Fetch(1, js.FetchMaxWait(6*time.Second), js.FetchHeartbeat(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got := drain(t, b); len(got) != 0 {
		t.Fatalf("an empty consumer fetched %v", ids(t, got))
	}
	b, err = cons.Fetch(1, js.FetchMaxWait(30*time.Second), js.FetchHeartbeat(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	c.publish(t, c.subject("a"), "h1")
	got := drain(t, b)
	wantIDs(t, got, "h1")
	ackAll(t, c.ctx, got)
}

// Consume hands every message, each subject's in order, and keeps handing
// what is published later; what its handler acknowledged is no longer
// pending.
func consumeConsume(t *testing.T, c *consumeCase) {
	cons := c.durable(t, "co", js.ConsumerConfig{})
	for _, p := range [][2]string{{"a", "a1"}, {"a", "a2"}, {"b", "b1"}, {"a", "a3"}, {"b", "b2"}} {
		c.publish(t, c.subject(p[0]), p[1])
	}
	r, cc := c.consumeInto(t, cons)
	testkit.WaitFor(t, "five messages consumed", time.Minute, func() bool { return r.count() >= 5 })
	c.publish(t, c.subject("b"), "b3")
	testkit.WaitFor(t, "a message published while consuming", time.Minute, func() bool { return r.count() >= 6 })
	cc.Stop()
	msgs, _ := r.snapshot()
	wantPerSubject(t, msgs, map[string][]string{c.subject("a"): {"a1", "a2", "a3"}, c.subject("b"): {"b1", "b2", "b3"}})
	if ci := info(t, c.ctx, cons); ci.NumPending != 0 || ci.NumAckPending != 0 {
		t.Fatalf("after consuming everything: pending %d ack pending %d", ci.NumPending, ci.NumAckPending)
	}
}

// Messages iterates the consumer's messages in order.
func consumeMessages(t *testing.T, c *consumeCase) {
	cons := c.durable(t, "it", js.ConsumerConfig{})
	for _, id := range []string{"i1", "i2", "i3"} {
		c.publish(t, c.subject("a"), id)
	}
	it, err := cons.Messages()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	var got []js.Msg
	for len(got) < 3 {
		m, err := it.Next(js.NextContext(c.ctx))
		if err != nil {
			t.Fatalf("after %v: %v", ids(t, got), err)
		}
		got = append(got, m)
	}
	wantIDs(t, got, "i1", "i2", "i3")
	ackAll(t, c.ctx, got)
}

// Two clients consuming one durable share its messages: each message goes
// to exactly one of them. (Which one gets what is the server's choice; the
// bridge serves a subject to one puller at a time, JetStream spreads it.)
func consumeShared(t *testing.T, c *consumeCase) {
	cons := c.durable(t, "sh", js.ConsumerConfig{})
	nc2, err := nats.Connect(c.url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	js2, err := js.New(nc2)
	if err != nil {
		t.Fatal(err)
	}
	cons2, err := js2.Consumer(c.ctx, ordersStream, c.name("sh"))
	if err != nil {
		t.Fatal(err)
	}
	r0, _ := c.consumeInto(t, cons)
	r1, _ := c.consumeInto(t, cons2)
	rs := []*received{r0, r1}
	const total = 20
	for i := 0; i < total; i++ {
		c.publish(t, c.subject(fmt.Sprintf("k%d", i%4)), fmt.Sprintf("s%d", i))
	}
	testkit.WaitFor(t, "every message consumed", time.Minute, func() bool { return rs[0].count()+rs[1].count() >= total })
	seen := map[string]int{}
	for i := range rs {
		msgs, _ := rs[i].snapshot()
		for _, m := range msgs {
			seen[idOf(t, m)]++
		}
	}
	for i := 0; i < total; i++ {
		if id := fmt.Sprintf("s%d", i); seen[id] != 1 {
			t.Fatalf("%s handed %d times (all: %v)", id, seen[id], seen)
		}
	}
	if ci := info(t, c.ctx, cons); ci.NumPending != 0 || ci.NumAckPending != 0 {
		t.Fatalf("pending %d ack pending %d", ci.NumPending, ci.NumAckPending)
	}
}

// A NAK hands the message again at once, counted as a second delivery.
func consumeNak(t *testing.T, c *consumeCase) {
	cons := c.durable(t, "nak", js.ConsumerConfig{})
	c.publish(t, c.subject("a"), "k1")
	first := fetch(t, cons, 1, 5*time.Second)
	wantDelivery(t, first, "k1", 1)
	if err := first[0].Nak(); err != nil {
		t.Fatal(err)
	}
	again := c.fetchUntil(t, cons, 1)
	wantDelivery(t, again, "k1", 2)
	ackAll(t, c.ctx, again)
	wantNothing(t, cons)
}

// NakWithDelay hands the message again, but not before the delay.
func consumeNakWithDelay(t *testing.T, c *consumeCase) {
	const delay = time.Second
	cons := c.durable(t, "nakd", js.ConsumerConfig{})
	c.publish(t, c.subject("a"), "d1")
	first := fetch(t, cons, 1, 5*time.Second)
	wantIDs(t, first, "d1")
	nakAt := time.Now()
	if err := first[0].NakWithDelay(delay); err != nil {
		t.Fatal(err)
	}
	again := c.fetchUntil(t, cons, 1)
	// A lower bound only: the redelivery cannot come before the delay,
	// however slow the machine.
	if waited := time.Since(nakAt); waited < delay {
		t.Fatalf("redelivered %v after a NAK with a delay of %v", waited, delay)
	}
	wantDelivery(t, again, "d1", 2)
	ackAll(t, c.ctx, again)
}

// A message not acknowledged within ack_wait is handed again, counted as
// the second delivery, no sooner than ack_wait after the first.
func consumeAckWaitExpiry(t *testing.T, c *consumeCase) {
	const ackWait = time.Second
	cons := c.durable(t, "aw", js.ConsumerConfig{AckWait: ackWait})
	c.publish(t, c.subject("a"), "x1")
	c.publish(t, c.subject("a"), "x2")
	fetchedAt := time.Now()
	first := fetch(t, cons, 2, 5*time.Second)
	wantIDs(t, first, "x1", "x2")
	ackAll(t, c.ctx, first[1:]) // x2 acknowledged, x1 left to expire
	again := c.fetchUntil(t, cons, 1)
	if waited := time.Since(fetchedAt); waited < ackWait {
		t.Fatalf("redelivered %v after the fetch, ack_wait %v", waited, ackWait)
	}
	wantDelivery(t, again, "x1", 2)
	if ci := info(t, c.ctx, cons); ci.NumRedelivered != 1 || ci.NumAckPending != 1 {
		t.Fatalf("redelivered %d ack pending %d, want 1 and 1", ci.NumRedelivered, ci.NumAckPending)
	}
	ackAll(t, c.ctx, again)
	wantNothing(t, cons)
}

// InProgress restarts the ack timer: a message kept in progress for more
// than twice its ack_wait is not handed to another fetch, and is
// acknowledged after.
func consumeInProgress(t *testing.T, c *consumeCase) {
	const ackWait = 3 * time.Second
	cons := c.durable(t, "wpi", js.ConsumerConfig{AckWait: ackWait})
	c.publish(t, c.subject("a"), "w1")
	first := fetch(t, cons, 1, 5*time.Second)
	wantIDs(t, first, "w1")
	stop, failed := make(chan struct{}), make(chan error, 1)
	go func() { // owned by this case: ends when stop closes
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if err := first[0].InProgress(); err != nil {
					failed <- err
					return
				}
			}
		}
	}()
	during := fetch(t, cons, 1, 2*ackWait+time.Second)
	close(stop)
	select {
	case err := <-failed:
		t.Fatalf("in progress: %v", err)
	default:
	}
	if len(during) != 0 {
		t.Fatalf("handed again while in progress: %v (delivered %d times)", ids(t, during), meta(t, during[0]).NumDelivered)
	}
	ackAll(t, c.ctx, first)
	if ci := info(t, c.ctx, cons); ci.NumAckPending != 0 || ci.NumRedelivered != 0 {
		t.Fatalf("ack pending %d redelivered %d", ci.NumAckPending, ci.NumRedelivered)
	}
}

// A terminated message is never handed again; the next one is. (The
// bridge also writes it to the queue's dead letters with the reason.)
func consumeTerm(t *testing.T, c *consumeCase) {
	const ackWait = time.Second
	cons := c.durable(t, "term", js.ConsumerConfig{AckWait: ackWait})
	c.publish(t, c.subject("a"), "t1")
	c.publish(t, c.subject("a"), "t2")
	first := fetch(t, cons, 1, 5*time.Second)
	wantIDs(t, first, "t1")
	if err := first[0].TermWithReason("poison"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the termination to be applied", time.Minute, func() bool { return info(t, c.ctx, cons).NumAckPending == 0 })
	c.takeIDs(t, cons, "t2")
	// t1 would be back after ack_wait had it not been terminated.
	if got := fetch(t, cons, 5, 3*ackWait); len(got) != 0 {
		t.Fatalf("after the termination: %v", ids(t, got))
	}
	if c.bridge != nil {
		// The bridge's addition: a terminated message is a dead letter of
		// the consumer's group (docs/jetstream.md, "Consuming").
		var dl struct {
			Messages []struct{ TransactionID, ErrorMessage string }
		}
		resp := httpGetJSON(t, "http://"+c.bridge.http+"/api/v1/dlq?queue="+ordersStream+"&consumerGroup="+url.QueryEscape(c.name("term")), &dl)
		if len(dl.Messages) != 1 || dl.Messages[0].TransactionID != c.msgID("t1") || !strings.Contains(dl.Messages[0].ErrorMessage, "poison") {
			t.Fatalf("dead letters: %s", resp)
		}
	}
}

// DoubleAck returns once the acknowledgement is stored: the consumer then
// has nothing pending. Acknowledging the same message again is answered
// too.
func consumeDoubleAck(t *testing.T, c *consumeCase) {
	cons := c.durable(t, "da", js.ConsumerConfig{})
	c.publish(t, c.subject("a"), "da1")
	got := fetch(t, cons, 1, 5*time.Second)
	wantIDs(t, got, "da1")
	if err := got[0].DoubleAck(c.ctx); err != nil {
		t.Fatalf("double ack: %v", err)
	}
	if ci := info(t, c.ctx, cons); ci.NumAckPending != 0 || ci.NumPending != 0 {
		t.Fatalf("after a double ack: ack pending %d pending %d", ci.NumAckPending, ci.NumPending)
	}
	// nats.go refuses a second ack of the same Msg value; the ack subject
	// is what a client acknowledging twice sends again.
	if _, err := c.nc.RequestWithContext(c.ctx, got[0].Reply(), []byte("+ACK")); err != nil {
		t.Fatalf("a second double ack: %v", err)
	}
	wantNothing(t, cons)
}

// A filter on one subject, and a wildcard filter, hand only what they
// match.
func consumeFilterOne(t *testing.T, c *consumeCase) {
	one := c.durable(t, "one", js.ConsumerConfig{FilterSubject: c.subject("a")})
	wild := c.durable(t, "wild", js.ConsumerConfig{FilterSubject: c.subject("w.*")})
	for _, p := range [][2]string{{"a", "a1"}, {"b", "b1"}, {"a", "a2"}, {"w.1", "w1"}, {"w.2", "w2"}, {"w.1.deep", "deep"}, {"w.1", "w3"}} {
		c.publish(t, c.subject(p[0]), p[1])
	}
	if ci := c.infoAfterPublishes(t, one, 2); ci.NumPending != 2 {
		t.Fatalf("%s pending %d, want 2", c.subject("a"), ci.NumPending)
	}
	c.takeIDs(t, one, "a1", "a2")
	wantNothing(t, one)
	c.takePerSubject(t, wild, map[string][]string{c.subject("w.1"): {"w1", "w3"}, c.subject("w.2"): {"w2"}})
	wantNothing(t, wild)
}

// A consumer with several filter subjects hands what any of them matches
// and echoes them.
func consumeFilterSeveral(t *testing.T, c *consumeCase) {
	filters := []string{c.subject("a"), c.subject("c")}
	cons := c.durable(t, "sev", js.ConsumerConfig{FilterSubjects: filters})
	if got := cons.CachedInfo().Config.FilterSubjects; !slices.Equal(got, filters) {
		t.Fatalf("filters echoed as %v", got)
	}
	for _, p := range [][2]string{{"a", "a1"}, {"b", "b1"}, {"c", "c1"}, {"a", "a2"}} {
		c.publish(t, c.subject(p[0]), p[1])
	}
	c.takePerSubject(t, cons, map[string][]string{c.subject("a"): {"a1", "a2"}, c.subject("c"): {"c1"}})
	wantNothing(t, cons)
}

// deliver all: what was stored before the consumer, and after.
func consumeDeliverAll(t *testing.T, c *consumeCase) {
	c.publish(t, c.subject("a"), "a1")
	c.publish(t, c.subject("b"), "b1")
	cons := c.durable(t, "all", js.ConsumerConfig{DeliverPolicy: js.DeliverAllPolicy})
	c.publish(t, c.subject("a"), "a2")
	c.takePerSubject(t, cons, map[string][]string{c.subject("a"): {"a1", "a2"}, c.subject("b"): {"b1"}})
	wantNothing(t, cons)
}

// deliver new: only what is stored after the consumer is created.
func consumeDeliverNew(t *testing.T, c *consumeCase) {
	c.publish(t, c.subject("a"), "old")
	cons := c.durable(t, "new", js.ConsumerConfig{DeliverPolicy: js.DeliverNewPolicy})
	c.publish(t, c.subject("a"), "a2")
	c.publish(t, c.subject("b"), "b1")
	c.takePerSubject(t, cons, map[string][]string{c.subject("a"): {"a2"}, c.subject("b"): {"b1"}})
	wantNothing(t, cons)
}

// deliver last: the last message the filter matches, then what follows.
func consumeDeliverLast(t *testing.T, c *consumeCase) {
	c.publish(t, c.subject("a"), "a1")
	c.publish(t, c.subject("a"), "a2")
	c.publish(t, c.subject("b"), "b1")
	cons := c.durable(t, "last", js.ConsumerConfig{DeliverPolicy: js.DeliverLastPolicy})
	c.takeIDs(t, cons, "b1")
	wantNothing(t, cons)
	c.publish(t, c.subject("a"), "a3")
	c.takeIDs(t, cons, "a3")
}

// deliver last per subject: each subject's last message, then what
// follows.
func consumeDeliverLastPerSubject(t *testing.T, c *consumeCase) {
	for _, p := range [][2]string{{"a", "a1"}, {"a", "a2"}, {"b", "b1"}, {"b", "b2"}, {"b", "b3"}} {
		c.publish(t, c.subject(p[0]), p[1])
	}
	cons := c.durable(t, "lps", js.ConsumerConfig{DeliverPolicy: js.DeliverLastPerSubjectPolicy})
	c.takePerSubject(t, cons, map[string][]string{c.subject("a"): {"a2"}, c.subject("b"): {"b3"}})
	wantNothing(t, cons)
	c.publish(t, c.subject("a"), "a3")
	c.takeIDs(t, cons, "a3")
}

// deliver by start time: what was stored at or after the time.
func consumeDeliverByStartTime(t *testing.T, c *consumeCase) {
	c.publish(t, c.subject("a"), "a1")
	c.publish(t, c.subject("b"), "b1")
	// The start is the next whole millisecond after the last store was
	// acknowledged, and the next publishes wait for it: so the test holds
	// for a store that keeps its times to the millisecond as well as to
	// the nanosecond.
	start := time.Now().Truncate(time.Millisecond).Add(time.Millisecond)
	testkit.WaitFor(t, "the clock to reach the start time", time.Minute, func() bool { return !time.Now().Before(start) })
	c.publish(t, c.subject("a"), "a2")
	c.publish(t, c.subject("b"), "b2")
	cons := c.durable(t, "time", js.ConsumerConfig{DeliverPolicy: js.DeliverByStartTimePolicy, OptStartTime: &start})
	c.takePerSubject(t, cons, map[string][]string{c.subject("a"): {"a2"}, c.subject("b"): {"b2"}})
	wantNothing(t, cons)
}

// deliver by start sequence, on a filter of one subject: from the
// sequence the publish was acknowledged with. On the bridge a sequence is
// an offset in a partition, so the filter must pin one partition; on a
// filter over several the bridge refuses the consumer, where JetStream
// starts at that stream sequence.
func consumeDeliverByStartSequence(t *testing.T, c *consumeCase) {
	var acks []*js.PubAck
	for _, id := range []string{"a1", "a2", "a3"} {
		acks = append(acks, c.publish(t, c.subject("a"), id))
	}
	cons := c.durable(t, "seq", js.ConsumerConfig{FilterSubject: c.subject("a"), DeliverPolicy: js.DeliverByStartSequencePolicy, OptStartSeq: acks[1].Sequence})
	c.takeIDs(t, cons, "a2", "a3")
	wantNothing(t, cons)

	wide := js.ConsumerConfig{Durable: c.name("seqwide"), FilterSubject: c.all(), DeliverPolicy: js.DeliverByStartSequencePolicy, OptStartSeq: acks[1].Sequence}
	_, err := c.js.CreateConsumer(c.ctx, ordersStream, wide)
	if c.bridge != nil {
		// The bridge's difference: a start sequence over several
		// partitions would name a different message in each.
		var apiErr *js.APIError
		if !errors.As(err, &apiErr) || apiErr.Code != 400 {
			t.Fatalf("by_start_sequence on %s: %v, want a 400 API error", c.all(), err)
		}
		return
	}
	if err != nil {
		t.Fatalf("by_start_sequence on %s: %v", c.all(), err)
	}
}

// An ordered consumer hands the messages in order with dense consumer
// sequences, and what is published later. Its filter is one subject: when
// it resets it starts again at a stream sequence, which on the bridge
// names a message only within one partition.
func consumeOrdered(t *testing.T, c *consumeCase) {
	for _, id := range []string{"o1", "o2", "o3"} {
		c.publish(t, c.subject("a"), id)
	}
	c.publish(t, c.subject("b"), "other")
	cons, err := c.js.OrderedConsumer(c.ctx, ordersStream, js.OrderedConsumerConfig{FilterSubjects: []string{c.subject("a")}})
	if err != nil {
		t.Fatalf("ordered consumer: %v", err)
	}
	r := &received{}
	cc, err := cons.Consume(r.add, js.ConsumeErrHandler(r.addErr))
	if err != nil {
		t.Fatalf("ordered consume: %v", err)
	}
	defer cc.Stop()
	testkit.WaitFor(t, "three ordered messages", time.Minute, func() bool { return r.count() >= 3 })
	c.publish(t, c.subject("a"), "o4")
	testkit.WaitFor(t, "a message published while consuming", time.Minute, func() bool { return r.count() >= 4 })
	cc.Stop()
	msgs, _ := r.snapshot()
	wantIDs(t, msgs, "o1", "o2", "o3", "o4")
	for i, m := range msgs {
		if md := meta(t, m); md.Sequence.Consumer != uint64(i+1) || md.NumDelivered != 1 || md.Stream != ordersStream {
			t.Fatalf("message %d: %+v", i, md)
		}
	}
}

// Deleting a consumer ends a Consume on it with ErrConsumerDeleted; the
// consumer is gone from lookups and lists, and deleting it again is
// ErrConsumerNotFound.
func consumeDelete(t *testing.T, c *consumeCase) {
	cons := c.durable(t, "del", js.ConsumerConfig{})
	c.publish(t, c.subject("a"), "x1")
	r, _ := c.consumeInto(t, cons)
	// Once the message is handled the Consume keeps a pull request waiting.
	testkit.WaitFor(t, "the message consumed", time.Minute, func() bool { return r.count() == 1 })
	if err := c.js.DeleteConsumer(c.ctx, ordersStream, c.name("del")); err != nil {
		t.Fatalf("delete: %v", err)
	}
	testkit.WaitFor(t, "the Consume to be told "+js.ErrConsumerDeleted.Error(), time.Minute, func() bool { return r.sawErr(js.ErrConsumerDeleted) })
	if _, err := c.js.Consumer(c.ctx, ordersStream, c.name("del")); !errors.Is(err, js.ErrConsumerNotFound) {
		t.Fatalf("lookup after delete: %v", err)
	}
	if err := c.js.DeleteConsumer(c.ctx, ordersStream, c.name("del")); !errors.Is(err, js.ErrConsumerNotFound) {
		t.Fatalf("delete again: %v, want %v", err, js.ErrConsumerNotFound)
	}
	if listed := c.consumerNames(t); slices.Contains(listed, c.name("del")) {
		t.Fatalf("%s still listed: %v", c.name("del"), listed)
	}
}

// Metadata names the stream and consumer; the stream sequence is the one
// the publish was acknowledged with (the bridge: the offset in the
// partition, as its PubAck says), the consumer sequence counts deliveries,
// pending counts what is left, the time is when it was stored.
func consumeMetadata(t *testing.T, c *consumeCase) {
	cons := c.durable(t, "md", js.ConsumerConfig{})
	before := time.Now()
	acks := []*js.PubAck{c.publish(t, c.subject("a"), "m1"), c.publish(t, c.subject("a"), "m2")}
	after := time.Now()
	// nats-server counts a consumer's pending messages after it acknowledges
	// their publishes: a delivery made before that says fewer pending.
	c.infoAfterPublishes(t, cons, 2)
	got := c.fetchUntil(t, cons, 2)
	wantIDs(t, got, "m1", "m2")
	for i, m := range got {
		md := meta(t, m)
		if md.Stream != ordersStream || md.Consumer != c.name("md") || md.Domain != "" || md.Sequence.Stream != acks[i].Sequence ||
			md.Sequence.Consumer != uint64(i+1) || md.NumDelivered != 1 || md.NumPending != uint64(1-i) {
			t.Fatalf("message %d: %+v, published as %+v", i, md, acks[i])
		}
		// A millisecond either side: a store may keep times to the
		// millisecond.
		if md.Timestamp.Before(before.Add(-time.Millisecond)) || md.Timestamp.After(after.Add(time.Millisecond)) {
			t.Fatalf("message %d stored at %v, published between %v and %v", i, md.Timestamp, before, after)
		}
	}
	ackAll(t, c.ctx, got)
}

// What was published is what is read: the subject it was published on
// (several tokens deep), its headers (Nats-Msg-Id, custom ones, a header
// with two values) and its body byte for byte: binary, JSON with white
// space, empty.
func consumeHeadersAndSubject(t *testing.T, c *consumeCase) {
	subject := c.subject("h.deep.er")
	bodies := [][]byte{{0x00, 0xff, 0x80, 'x', '\n'}, []byte(" {\"a\": [1, 2]}\n"), nil}
	for i, body := range bodies {
		m := nats.NewMsg(subject)
		m.Header.Set("Nats-Msg-Id", c.msgID(fmt.Sprintf("h%d", i)))
		m.Header.Set("X-Trace", fmt.Sprintf("trace-%d", i))
		m.Header.Add("X-Multi", "one")
		m.Header.Add("X-Multi", "two")
		m.Data = body
		if _, err := c.js.PublishMsg(c.ctx, m); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	cons := c.durable(t, "hdr", js.ConsumerConfig{})
	var got []js.Msg
	for len(got) < len(bodies) {
		if c.ctx.Err() != nil {
			t.Fatalf("%d of %d messages", len(got), len(bodies))
		}
		got = append(got, fetch(t, cons, len(bodies)-len(got), 2*time.Second)...)
	}
	for i, m := range got {
		if m.Subject() != subject {
			t.Fatalf("message %d on %q, published on %q", i, m.Subject(), subject)
		}
		h := m.Headers()
		if h.Get("Nats-Msg-Id") != c.msgID(fmt.Sprintf("h%d", i)) || h.Get("X-Trace") != fmt.Sprintf("trace-%d", i) || !slices.Equal(h.Values("X-Multi"), []string{"one", "two"}) {
			t.Fatalf("message %d headers %v", i, h)
		}
		if !bytes.Equal(m.Data(), bodies[i]) {
			t.Fatalf("message %d body %q, published %q", i, m.Data(), bodies[i])
		}
	}
	ackAll(t, c.ctx, got)
}

// httpGetJSON decodes a 200 answer into v and returns the body.
func httpGetJSON(t *testing.T, u string, v any) []byte {
	t.Helper()
	resp, err := (&http.Client{Timeout: time.Minute}).Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || json.Unmarshal(body, v) != nil {
		t.Fatalf("GET %s: %d %s %v", u, resp.StatusCode, body, err)
	}
	return body
}
