package bridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/ownership"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

// What a JetStream producer published is what is read: the subject and
// the header block are stored with the message, and the reads and pops of
// pgwire hand them back, while Queen's pushes store neither.

// headedMsg is a publish with a Nats-Msg-Id and headers of the producer's
// own, and the header block the bridge stores for it.
func headedMsg(subject, id string) (*nats.Msg, string) {
	m := nats.NewMsg(subject)
	m.Header.Set("X-Order-Source", "web")
	m.Header.Add("X-Tag", "a")
	m.Header.Add("X-Tag", "b")
	m.Data = []byte(`{"sku":"A-1"}`)
	return m, "NATS/1.0\r\nNats-Msg-Id: " + id + "\r\nX-Order-Source: web\r\nX-Tag: a\r\nX-Tag: b\r\n\r\n"
}

// checkHeaded fails unless got is the stored form of the publish m with
// Nats-Msg-Id id, whose header block is block.
func checkHeaded(t *testing.T, got pgwire.Message, m *nats.Msg, id, block string) {
	t.Helper()
	f := got.Frame
	if f.TransactionID != id || f.Subject != m.Subject || string(f.Header) != block || f.Flags&segment.FlagNATS == 0 {
		t.Fatalf("stored %q on %q with header %q (flags %08b); want %q on %q with %q",
			f.TransactionID, f.Subject, f.Header, f.Flags, id, m.Subject, block)
	}
	h, err := nats.DecodeHeadersMsg(f.Header)
	want := nats.Header{"Nats-Msg-Id": {id}}
	for k, v := range m.Header {
		want[k] = v
	}
	if err != nil || !reflect.DeepEqual(h, want) {
		t.Fatalf("the stored header decodes to %v (%v), want %v", h, err, want)
	}
}

func TestJetStreamSubjectAndHeadersAreReadBack(t *testing.T) {
	tg := bridgeTarget(t, nodeOpts{})
	ctx := jsCtx(t)
	j := tg.js(t)
	n := tg.bridge
	stream, subject := tg.fresh(t)
	partition := partitionOf(subject)

	headed, block := headedMsg(subject, "order-1")
	if _, err := j.PublishMsg(ctx, headed, js.WithMsgID("order-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Publish(ctx, subject, []byte(`{"bare":true}`)); err != nil { // no header at all
		t.Fatal(err)
	}
	push := fmt.Sprintf(`{"items":[{"queue":%q,"partition":%q,"transactionId":"queen-3","payload":{"queen":true}}]}`, stream, partition)
	if status, out := n.post("/api/v1/push", []byte(push)); status != http.StatusCreated && status != http.StatusOK {
		t.Fatalf("push: %d %s", status, out)
	}

	read, err := n.db.ReadMessages(ctx, tenancy.TenantID{}, stream, partition, 1, 10, 1<<20)
	if err != nil || len(read) != 3 {
		t.Fatalf("read %d messages: %v", len(read), err)
	}
	pop, err := n.db.Pop(ctx, pgwire.PopRequest{Queue: stream, Partition: partition, Group: pgwire.QueueMode, Batch: 10, AutoAck: true})
	if err != nil || pop.Status != pgwire.PopDelivered || len(pop.Messages) != 3 {
		t.Fatalf("pop: %+v %v", pop, err)
	}
	for via, msgs := range map[string][]pgwire.Message{"read": read, "pop": pop.Messages} {
		checkHeaded(t, msgs[0], headed, "order-1", block)
		if f := msgs[1].Frame; f.Subject != subject || f.Header != nil || f.Flags&segment.FlagNATS == 0 {
			t.Fatalf("%s: a publish without headers reads as %q with header %q (flags %08b)", via, f.Subject, f.Header, f.Flags)
		}
		if f := msgs[2].Frame; f.TransactionID != "queen-3" || f.Subject != "" || f.Header != nil || f.Flags&segment.FlagNATS != 0 {
			t.Fatalf("%s: a Queen push reads as %q on %q with header %q (flags %08b)", via, f.TransactionID, f.Subject, f.Header, f.Flags)
		}
	}

	// Queen's read answer of the same messages names neither: its fields
	// are those of a Queen push, whoever produced the message.
	status, body := n.get(fmt.Sprintf("/api/v1/messages?queue=%s&partition=%s", stream, partition))
	var page struct{ Messages []map[string]json.RawMessage }
	if status != http.StatusOK || json.Unmarshal(body, &page) != nil || len(page.Messages) != 3 {
		t.Fatalf("read answer %d %s", status, body)
	}
	for k := range page.Messages[0] {
		if _, ok := page.Messages[2][k]; !ok {
			t.Fatalf("the JetStream message's read answer has a field %q a Queen push's has not: %s", k, body)
		}
	}
	if strings.Contains(string(body), "X-Order-Source") || strings.Contains(string(body), `"subject"`) {
		t.Fatalf("the read answer shows the NATS header or subject: %s", body)
	}
}

// A publish answered buffered (spooled in maintenance mode) keeps its
// subject and header through the spool and the drain.
func TestJetStreamHeadersSurviveTheSpool(t *testing.T) {
	tg := bridgeTarget(t, nodeOpts{})
	n := tg.bridge
	stream, subject := tg.fresh(t)
	if status, out := n.post("/api/v1/system/maintenance", []byte(`{"enabled": true}`)); status != http.StatusOK {
		t.Fatalf("enable: %d %s", status, out)
	}
	headed, block := headedMsg(subject, "spooled-1")
	ack, err := tg.js(t).PublishMsg(jsCtx(t), headed, js.WithMsgID("spooled-1"))
	if err != nil || ack.Sequence != 0 {
		t.Fatalf("in maintenance: %+v %v", ack, err)
	}
	if status, out := n.post("/api/v1/system/maintenance", []byte(`{"enabled": false}`)); status != http.StatusOK {
		t.Fatalf("disable: %d %s", status, out)
	}
	waitUntil(t, "the spool to drain", 30*time.Second, func() bool { return n.sp.Stats().Records == 0 })
	read, err := n.db.ReadMessages(context.Background(), tenancy.TenantID{}, stream, partitionOf(subject), 1, 10, 1<<20)
	if err != nil || len(read) != 1 {
		t.Fatalf("read %d messages: %v", len(read), err)
	}
	checkHeaded(t, read[0], headed, "spooled-1", block)
}

// A publish taken by a bridge that does not own its partition is forwarded
// to the owner with its subject and header.
func TestJetStreamHeadersSurviveAForward(t *testing.T) {
	tg := bridgeTarget(t, nodeOpts{})
	taker := tg.bridge // the only bridge subscribed to the stream
	owner := newNode(t, nodeOpts{dsn: taker.db.Pool().Config().ConnConfig.ConnString(), prefix: taker.prefix})
	waitUntil(t, "both bridges to see two", 20*time.Second, func() bool {
		return metricValue(t, taker, "queen_ownership_bridges") == 2 && metricValue(t, owner, "queen_ownership_bridges") == 2
	})
	stream, _ := tg.fresh(t)
	msg, err := taker.nc.Request(ownership.TableSubject(taker.prefix), nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var tab ownership.OwnersTable
	if err := json.Unmarshal(msg.Data, &tab); err != nil || tab.Buckets == 0 {
		t.Fatalf("owners' table %s: %v", msg.Data, err)
	}
	// The first subject of the stream whose partition the other bridge owns.
	var subject string
	for i := 0; subject == ""; i++ {
		_, s := tg.fresh(t)
		b := ownership.BucketOf(tenancy.TenantID{}, stream, partitionOf(s), tab.Buckets)
		if tab.Bridges[tab.Owners[b]].ID == owner.br.ID() {
			subject = s
		}
	}
	headed, block := headedMsg(subject, "forwarded-1")
	if _, err := tg.js(t).PublishMsg(jsCtx(t), headed, js.WithMsgID("forwarded-1")); err != nil {
		t.Fatal(err)
	}
	if f := metricValue(t, taker, "queen_forward_groups_total"); f != 1 {
		t.Fatalf("%v groups forwarded, want 1", f)
	}
	if fb := metricValue(t, taker, "queen_forward_fallback_groups_total"); fb != 0 {
		t.Fatalf("%v groups written by the bridge that took them", fb)
	}
	read, err := owner.db.ReadMessages(context.Background(), tenancy.TenantID{}, stream, partitionOf(subject), 1, 10, 1<<20)
	if err != nil || len(read) != 1 {
		t.Fatalf("read %d messages: %v", len(read), err)
	}
	checkHeaded(t, read[0], headed, "forwarded-1", block)
}
