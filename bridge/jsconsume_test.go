package bridge_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
	"github.com/queenbridge/queenbridge/embedded"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/jetstream"
)

// consumerNode is a bridge with one stream, on a NATS server of its own
// whose leafnode listener it delivers on, and a client connection.
func consumerNode(t *testing.T) (stream, subjectPrefix string, j js.JetStream) {
	t.Helper()
	ns, err := embedded.StartNATS(embedded.NATSConfig{Listen: "-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Stop)
	tag := randHex(4)
	stream = "ORDERS_" + tag
	newNode(t, nodeOpts{natsURL: ns.ClientURL(), streams: []jetstream.Stream{{Name: stream, Filters: []string{"js" + tag + ".>"}}},
		leaf: [3]string{ns.LeafURL(), embedded.LeafUser, ns.LeafPassword()}})
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if j, err = js.New(nc); err != nil {
		t.Fatal(err)
	}
	return stream, "js" + tag, j
}

// A durable pull consumer made with nats.go reads what its producer
// published, in order, with the stored subject and the partition offset
// as the stream sequence; a double ack is answered; a NAK comes back with
// its delivery count; acknowledged messages never come again.
func TestJetStreamPullConsumerFetchAckNak(t *testing.T) {
	stream, pfx, j := consumerNode(t)
	ctx := jsCtx(t)
	for i := 1; i <= 3; i++ {
		if _, err := j.Publish(ctx, pfx+".eu", []byte(fmt.Sprintf(`{"n":%d}`, i))); err != nil {
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
			m.Subject() != pfx+".eu" || string(m.Data()) != fmt.Sprintf(`{"n":%d}`, i+1) {
			t.Fatalf("message %d: %q %q %+v %v", i, m.Subject(), m.Data(), meta, err)
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
}
