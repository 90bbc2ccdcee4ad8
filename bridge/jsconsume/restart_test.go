package jsconsume_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	js "github.com/nats-io/nats.go/jetstream"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// A durable consumer outlives a restart of what serves it: what was
// acknowledged is never handed again, what was handed and not
// acknowledged comes back (a second delivery), and new messages follow. The JetStream server restarts on its store; the bridge
// process restarts (SIGTERM) on its database while its NATS server, and so
// the client's connection, stays up.
func TestJetStreamDurableConsumerAcrossRestart(t *testing.T) {
	bin := bridgeBinary(t)
	for _, tg := range []*consumeTarget{realJetStreamOrders(t), bridgeOnHub(t, bin, leafHubs(t, 1)[0], testenv.NewDatabase(t))} {
		t.Run(tg.name, func(t *testing.T) {
			const ackWait = 3 * time.Second
			c := newConsumeCase(t, tg)
			c.durable(t, "dur", js.ConsumerConfig{AckWait: ackWait})
			for _, p := range [][2]string{{"a", "a1"}, {"a", "a2"}, {"b", "b1"}, {"b", "b2"}} {
				c.publish(t, c.subject(p[0]), p[1])
			}
			cons := c.lookup(t, "dur")
			first := c.fetchUntil(t, cons, 4)
			wantPerSubject(t, first, map[string][]string{c.subject("a"): {"a1", "a2"}, c.subject("b"): {"b1", "b2"}})
			var acked []js.Msg
			for _, m := range first {
				if id := idOf(t, m); id == "a1" || id == "b1" {
					acked = append(acked, m)
				}
			}
			ackAll(t, c.ctx, acked)

			tg.restart(t, false)
			cons = c.lookup(t, "dur")
			// They come back; when is not asserted: JetStream hands a
			// restored consumer's pending messages again without waiting
			// out their ack_wait (2.1 s after the fetch here, ack_wait 3 s).
			again := c.fetchUntil(t, cons, 2)
			wantPerSubject(t, again, map[string][]string{c.subject("a"): {"a2"}, c.subject("b"): {"b2"}})
			for _, m := range again {
				if md := meta(t, m); md.NumDelivered != 2 {
					t.Fatalf("%s delivered %d times, want 2 (handed before the restart, never acknowledged)", idOf(t, m), md.NumDelivered)
				}
			}
			ackAll(t, c.ctx, again)
			// New messages follow. (Published only now: while a2 waits
			// for its redelivery JetStream hands a newer a3 first, where
			// the bridge keeps a partition's order.)
			c.publish(t, c.subject("a"), "a3")
			again = c.fetchUntil(t, cons, 1)
			wantDelivery(t, again, "a3", 1)
			ackAll(t, c.ctx, again)
			wantNothing(t, cons)
		})
	}
}

// lookup finds the case's consumer name, waiting while the target (just
// restarted) answers nothing definite yet; "not found" is definite.
func (c *consumeCase) lookup(t *testing.T, name string) js.Consumer {
	t.Helper()
	var cons js.Consumer
	var err error
	testkit.WaitFor(t, "an answer about consumer "+c.name(name), time.Minute, func() bool {
		ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
		defer cancel()
		cons, err = c.js.Consumer(ctx, ordersStream, c.name(name))
		return err == nil || errors.Is(err, js.ErrConsumerNotFound)
	})
	if err != nil {
		t.Fatalf("consumer %s: %v", c.name(name), err)
	}
	return cons
}

// ackLedger records, for a Consume across a kill, what each message id was
// handed and whether a DoubleAck of it returned: nats.go's handler
// goroutine writes, the test reads; mu guards it.
type ackLedger struct {
	mu     sync.Mutex
	acked  map[string]bool
	handed map[string]int
	// unsure are ids whose DoubleAck failed (the bridge died before it
	// answered): the acknowledgement may have been stored or not, so the
	// message may or may not come again, as on JetStream.
	unsure  map[string]bool
	errs    int
	badBody int
	// again lists ids handed after a DoubleAck of them had returned.
	again []string
}

func (l *ackLedger) handle(ctx context.Context, m js.Msg) {
	var b struct{ ID string }
	if json.Unmarshal(m.Data(), &b) != nil || b.ID == "" {
		l.mu.Lock()
		l.badBody++
		l.mu.Unlock()
		return
	}
	l.mu.Lock()
	l.handed[b.ID]++
	if l.acked[b.ID] {
		l.again = append(l.again, b.ID)
	}
	l.mu.Unlock()
	actx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err := m.DoubleAck(actx)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		l.acked[b.ID] = true
	} else {
		l.unsure[b.ID] = true
	}
}

// settled counts ids acknowledged, or whose acknowledgement is unsure.
func (l *ackLedger) settled() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.acked)
	for id := range l.unsure {
		if !l.acked[id] {
			n++
		}
	}
	return n
}

func (l *ackLedger) consumeErr(js.ConsumeContext, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs++
}

func (l *ackLedger) ackedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// The bridge serving a consumer is killed (SIGKILL) while a Consume
// acknowledges with DoubleAck, and started again on its database: nothing
// whose acknowledgement had returned is handed again, and every message,
// those published before the kill and after the restart, is handed and
// acknowledged (or its DoubleAck was cut by the kill: then it may have
// been stored, and need not come again). The same run against JetStream is the control: a server
// inside the test's process cannot be killed, so it is stopped and started
// again on its store; the Consume and its ledger meet the same checks.
func TestJetStreamConsumerSurvivesKilledBridge(t *testing.T) {
	t.Run("jetstream", func(t *testing.T) { consumeAcrossRestart(t, realJetStreamOrders(t), false) })
	t.Run("bridge", func(t *testing.T) {
		consumeAcrossRestart(t, bridgeOnHub(t, bridgeBinary(t), leafHubs(t, 1)[0], testenv.NewDatabase(t)), true)
	})
}

// consumeAcrossRestart consumes with DoubleAck while tg restarts (kill:
// SIGKILL) and checks nothing acknowledged comes again and nothing is
// lost.
func consumeAcrossRestart(t *testing.T, tg *consumeTarget, kill bool) {
	c := newConsumeCase(t, tg)
	c.ctx = deadline(t, 5*time.Minute)
	// ack_wait is long beside the handling of a message (milliseconds) so
	// that no copy is handed again while an earlier one's acknowledgement
	// is on its way: what is handed after a DoubleAck returned was sent
	// after the acknowledgement was stored.
	cons := c.durable(t, "k", js.ConsumerConfig{AckWait: 10 * time.Second})
	const before, after = 200, 100
	for i := 0; i < before; i++ {
		c.publish(t, c.subject(fmt.Sprintf("p%d", i%4)), fmt.Sprintf("k%d", i))
	}
	l := &ackLedger{acked: map[string]bool{}, handed: map[string]int{}, unsure: map[string]bool{}}
	// A short expiry makes the client notice the dead bridge (missed
	// heartbeats) and pull again within seconds.
	cc, err := cons.Consume(func(m js.Msg) { l.handle(c.ctx, m) }, js.ConsumeErrHandler(l.consumeErr),
		js.PullExpiry(4*time.Second), js.PullMaxMessages(5))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()
	testkit.WaitFor(t, "acknowledgements before the kill", 2*time.Minute, func() bool { return l.ackedCount() >= 50 })
	tg.restart(t, kill)
	acknowledgedBefore := l.ackedCount()
	for i := before; i < before+after; i++ {
		c.publish(t, c.subject(fmt.Sprintf("p%d", i%4)), fmt.Sprintf("k%d", i))
	}
	// Done when every message is acknowledged (or its DoubleAck was cut
	// by the kill) and the consumer holds nothing pending or unacknowledged.
	for end := time.Now().Add(4 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if l.settled() >= before+after {
			if ci, err := cons.Info(c.ctx); err == nil && ci.NumPending == 0 && ci.NumAckPending == 0 {
				break
			}
		}
		if time.Now().After(end) {
			l.mu.Lock()
			var missing []string
			for i := 0; i < before+after; i++ {
				if id := fmt.Sprintf("k%d", i); !l.acked[id] {
					missing = append(missing, fmt.Sprintf("%s(handed %d, unsure %v)", id, l.handed[id], l.unsure[id]))
				}
			}
			errs := l.errs
			l.mu.Unlock()
			ci, err := cons.Info(c.ctx)
			t.Fatalf("after 4 minutes %d of %d acknowledged; not: %v; %d consume errors; consumer %+v %v",
				l.ackedCount(), before+after, missing, errs, ci, err)
		}
	}
	cc.Stop()
	select {
	case <-cc.Closed():
	case <-c.ctx.Done():
		t.Fatal("the Consume did not close")
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.again) > 0 || l.badBody > 0 {
		t.Fatalf("handed again after their acknowledgement returned: %v; %d bodies not the test's", l.again, l.badBody)
	}
	redelivered := 0
	for i := 0; i < before+after; i++ {
		id := fmt.Sprintf("k%d", i)
		if l.handed[id] == 0 {
			t.Fatalf("%s never handed", id)
		}
		if !l.acked[id] && !l.unsure[id] {
			t.Fatalf("%s never acknowledged", id)
		}
		if l.handed[id] > 1 {
			redelivered++
		}
	}
	if ci := info(t, c.ctx, cons); ci.NumPending != 0 || ci.NumAckPending != 0 {
		t.Fatalf("after everything: pending %d ack pending %d", ci.NumPending, ci.NumAckPending)
	}
	t.Logf("%d of %d acknowledged when the restart was over; %d handed more than once (in flight at the restart); %d errors reported to the Consume",
		acknowledgedBefore, before, redelivered, l.errs)
}

// Two bridges on one database, each on its own NATS server of one
// cluster: a client is answered by the bridge on its server (NATS prefers
// a local queue subscriber), so a consumer created through one is found,
// fetched from and acknowledged through the other, each message once.
// Only the bridge: JetStream's counterpart is a clustered stream.
func TestJetStreamConsumerOnTwoBridges(t *testing.T) {
	tgs := twoBridges(t)
	c0 := newConsumeCase(t, tgs[0])
	consumeThroughTwo(t, c0, &consumeCase{consumeTarget: tgs[1], ctx: c0.ctx, tag: c0.tag}) // the same subjects and names, through the other bridge
}

// twoBridges starts two bridge processes on one database, each on a hub
// of its own, and waits until each sees the other.
func twoBridges(t *testing.T) []*consumeTarget {
	t.Helper()
	bin := bridgeBinary(t)
	hubs := leafHubs(t, 2)
	dsn := testenv.NewDatabase(t)
	fast := []string{"QUEEN_OWNERSHIP_HEARTBEAT_MS=100", "QUEEN_FORWARD_TIMEOUT_MS=1000"}
	tgs := []*consumeTarget{bridgeOnHub(t, bin, hubs[0], dsn, fast...), bridgeOnHub(t, bin, hubs[1], dsn, fast...)}
	testkit.WaitFor(t, "each bridge to see the other", 2*time.Minute, func() bool {
		return promValue(tgs[0].bridge.http, "queen_ownership_bridges") == 2 && promValue(tgs[1].bridge.http, "queen_ownership_bridges") == 2
	})
	return tgs
}

// consumeThroughTwo creates a consumer through c0 and reads it through
// both, each fetch acknowledged through the other.
func consumeThroughTwo(t *testing.T, c0, c1 *consumeCase) {
	c0.durable(t, "two", js.ConsumerConfig{})
	cons := []js.Consumer{c0.lookup(t, "two"), c1.lookup(t, "two")}
	if cfg := cons[1].CachedInfo().Config; cfg.Durable != c0.name("two") || cfg.FilterSubject != c0.all() {
		t.Fatalf("the consumer seen through the other bridge: %+v", cfg)
	}
	const total = 20
	for i := 0; i < total; i++ {
		cs := []*consumeCase{c0, c1}[i%2]
		cs.publish(t, cs.subject(fmt.Sprintf("p%d", i%4)), fmt.Sprintf("t%d", i))
	}
	seen := map[string]int{}
	fetched := [2]int{}
	for turn := 0; len(seen) < total; turn++ {
		if c0.ctx.Err() != nil {
			t.Fatalf("%d of %d handed before the deadline: %v", len(seen), total, seen)
		}
		// Fetch through one bridge, acknowledge through the other.
		from, ackVia := turn%2, []*consumeCase{c1, c0}[turn%2]
		for _, m := range fetch(t, cons[from], 5, 2*time.Second) {
			seen[idOf(t, m)]++
			fetched[from]++
			if _, err := ackVia.nc.RequestWithContext(c0.ctx, m.Reply(), []byte("+ACK")); err != nil {
				t.Fatalf("ack of %s through the other bridge: %v", idOf(t, m), err)
			}
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("%s handed %d times: %v", id, n, seen)
		}
	}
	if fetched[0] == 0 || fetched[1] == 0 {
		t.Fatalf("fetched through each bridge: %v; want some through both", fetched)
	}
	for i, cs := range []*consumeCase{c0, c1} {
		if ci := info(t, cs.ctx, cons[i]); ci.NumPending != 0 || ci.NumAckPending != 0 {
			t.Fatalf("through bridge %d: pending %d ack pending %d", i, ci.NumPending, ci.NumAckPending)
		}
		wantNothing(t, cons[i])
	}
	if err := c1.js.DeleteConsumer(c1.ctx, ordersStream, c1.name("two")); err != nil {
		t.Fatalf("delete through the other bridge: %v", err)
	}
	if _, err := c0.js.Consumer(c0.ctx, ordersStream, c0.name("two")); !errors.Is(err, js.ErrConsumerNotFound) {
		t.Fatalf("after the delete: %v", err)
	}
}

// promValue reads one unlabelled sample of a bridge's metrics; -1 when the
// bridge does not answer or has no such sample.
func promValue(addr, name string) float64 {
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + addr + "/metrics/prometheus")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return -1
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` ([0-9.e+-]+)$`).FindSubmatch(body)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return -1
	}
	return v
}
