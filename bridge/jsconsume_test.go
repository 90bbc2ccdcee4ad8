package bridge_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	js "github.com/nats-io/nats.go/jetstream"
	"github.com/queenbridge/queenbridge/embedded"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/jetstream"
)

// consumerNodes are n bridges sharing one stream, one database and a NATS
// server of their own, whose leafnode listener they deliver on, and a
// client connection.
func consumerNodes(t *testing.T, n int) (nodes []*node, stream, subjectPrefix string, j js.JetStream) {
	t.Helper()
	ns, err := embedded.StartNATS(embedded.NATSConfig{Listen: "-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Stop)
	tag := randHex(4)
	stream = "ORDERS_" + tag
	for i := 0; i < n; i++ {
		o := nodeOpts{natsURL: ns.ClientURL(), streams: []jetstream.Stream{{Name: stream, Filters: []string{"js" + tag + ".>"}}},
			leaf: [3]string{ns.LeafURL(), embedded.LeafUser, ns.LeafPassword()}, prefix: "q" + tag, beat: 250 * time.Millisecond}
		if i > 0 {
			o.dsn = nodes[0].db.Pool().Config().ConnConfig.ConnString()
		}
		nodes = append(nodes, newNode(t, o))
	}
	_, j = testkit.JetStream(t, ns.ClientURL())
	return nodes, stream, "js" + tag, j
}

func consumerNode(t *testing.T) (stream, subjectPrefix string, j js.JetStream) {
	_, stream, subjectPrefix, j = consumerNodes(t, 1)
	return stream, subjectPrefix, j
}

// A durable pull consumer made with nats.go reads what its producer
// published, in order, with the stored subject and the partition offset
// as the stream sequence; a double ack is answered; a NAK comes back with
// its delivery count; acknowledged messages never come again.
func TestJetStreamPullConsumerFetchAckNak(t *testing.T) {
	nodes, stream, pfx, j := consumerNodes(t, 1)
	ctx := jsCtx(t)
	for i := 1; i <= 3; i++ {
		if _, err := j.Publish(ctx, pfx+".eu", []byte(fmt.Sprintf(`{"n":%d}`, i)), js.WithMsgID(fmt.Sprint("m", i))); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := j.CreateOrUpdateConsumer(ctx, stream, js.ConsumerConfig{Durable: "C", AckPolicy: js.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(3, js.FetchMaxWait(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var got []js.Msg
	for m := range batch.Messages() {
		got = append(got, m)
	}
	if batch.Error() != nil || len(got) != 3 {
		t.Fatalf("fetch: %d messages, %v", len(got), batch.Error())
	}
	for i, m := range got {
		meta, err := m.Metadata()
		if err != nil || meta.Sequence.Stream != uint64(i+1) || meta.Sequence.Consumer != uint64(i+1) || meta.NumDelivered != 1 ||
			m.Subject() != pfx+".eu" || string(m.Data()) != fmt.Sprintf(`{"n":%d}`, i+1) || m.Headers().Get("Nats-Msg-Id") != fmt.Sprint("m", i+1) {
			t.Fatalf("message %d: %q %q %v %+v %v", i, m.Subject(), m.Data(), m.Headers(), meta, err)
		}
	}
	if err := got[0].DoubleAck(ctx); err != nil {
		t.Fatalf("double ack: %v", err)
	}
	if err := got[1].Nak(); err != nil {
		t.Fatal(err)
	}
	if err := got[2].Ack(); err != nil {
		t.Fatal(err)
	}
	again, err := cons.Next(js.FetchMaxWait(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := again.Metadata()
	if meta.Sequence.Stream != 2 || meta.NumDelivered != 2 {
		t.Fatalf("after the NAK: %+v", meta)
	}
	if err := again.DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "nothing pending", 10*time.Second, func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.AckFloor.Stream == 3
	})
	empty, err := cons.FetchNoWait(5)
	if err != nil {
		t.Fatal(err)
	}
	for m := range empty.Messages() {
		t.Fatalf("an acknowledged message came again: %q", m.Data())
	}
	if d, r := metricValue(t, nodes[0], "queen_js_deliveries_total"), metricValue(t, nodes[0], "queen_js_redeliveries_total"); d != 4 || r != 1 {
		t.Fatalf("metrics: %v deliveries, %v redeliveries", d, r)
	}
	if c := metricValue(t, nodes[0], "queen_js_ack_commits_total"); c < 1 {
		t.Fatalf("metrics: %v fused ack commits", c)
	}
}

// Two bridges: a consumer lives on one; pulls and acks reaching the other
// are forwarded to it. Every message is delivered once and acknowledged.
func TestJetStreamConsumerForwardsOnTwoBridges(t *testing.T) {
	nodes, stream, pfx, j := consumerNodes(t, 2)
	waitUntil(t, "both bridges to see two", 20*time.Second, func() bool {
		return metricValue(t, nodes[0], "queen_ownership_bridges") == 2 && metricValue(t, nodes[1], "queen_ownership_bridges") == 2
	})
	ctx := jsCtx(t)
	const total = 24
	for i := 0; i < total; i++ {
		if _, err := j.Publish(ctx, fmt.Sprintf("%s.p%d", pfx, i%4), []byte(fmt.Sprintf(`{"n":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := j.CreateOrUpdateConsumer(ctx, stream, js.ConsumerConfig{Durable: "C", AckPolicy: js.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for pulls := 0; len(seen) < total; pulls++ {
		if pulls > 4*total {
			t.Fatalf("%d of %d messages after %d pulls", len(seen), total, pulls)
		}
		batch, err := cons.Fetch(1, js.FetchMaxWait(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			if seen[string(m.Data())] {
				t.Fatalf("%q delivered twice", m.Data())
			}
			seen[string(m.Data())] = true
			if err := m.DoubleAck(ctx); err != nil {
				t.Fatalf("double ack of %q: %v", m.Data(), err)
			}
		}
		if err := batch.Error(); err != nil {
			t.Fatal(err)
		}
	}
	if nodes[0].br.JSForwardsSent()+nodes[1].br.JSForwardsSent() == 0 {
		t.Fatal("no pull or ack reached the bridge that does not own the consumer")
	}
	info, err := cons.Info(ctx)
	if err != nil || info.NumAckPending != 0 || info.NumPending != 0 {
		t.Fatalf("at the end: %+v %v", info, err)
	}
}

// Consume, nats.go's continuous pull: messages published while it runs
// reach it (from the bridge's memory), each acknowledged once.
func TestJetStreamConsumeReceivesNewMessages(t *testing.T) {
	stream, pfx, j := consumerNode(t)
	ctx := jsCtx(t)
	cons, err := j.CreateOrUpdateConsumer(ctx, stream, js.ConsumerConfig{Durable: "live", AckPolicy: js.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // guards got: the handler runs on nats.go's goroutine
	got := map[string]int{}
	cc, err := cons.Consume(func(m js.Msg) {
		mu.Lock()
		got[string(m.Data())]++
		mu.Unlock()
		_ = m.Ack()
	}, js.PullMaxMessages(16))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()
	const total = 40
	for i := 0; i < total; i++ {
		if _, err := j.Publish(ctx, fmt.Sprintf("%s.p%d", pfx, i%3), []byte(fmt.Sprintf(`{"n":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, "every message consumed", 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == total
	})
	testkit.WaitFor(t, "every ack stored", 30*time.Second, func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending == 0
	})
	mu.Lock()
	defer mu.Unlock()
	for body, n := range got {
		if n != 1 {
			t.Fatalf("%s consumed %d times", body, n)
		}
	}
}
