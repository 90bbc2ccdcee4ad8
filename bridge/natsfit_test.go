package bridge_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// natsAsk sends a NATS request and fails the test when no answer comes:
// every case below must be answered, and well before this deadline.
func (n *node) natsAsk(subject, body string) *nats.Msg {
	n.t.Helper()
	msg, err := n.nc.Request(n.prefix+".v1."+subject, []byte(body), 20*time.Second)
	if err != nil {
		n.t.Fatalf("%s %s: %v", subject, body, err)
	}
	return msg
}

// A message larger than what one NATS message carries is refused over
// NATS at once (413, naming its size, the bound and HTTP), the claim is
// handed back (an HTTP pop gets the message at once, under a lease or
// with auto-ack), and it is counted; a read of it over NATS is refused
// alike. Small messages around it still pop over NATS.
func TestNATSAnswersNeverPassMaxPayload(t *testing.T) {
	n := newNode(t, nodeOpts{})
	limit := n.nc.MaxPayload()
	big := `"` + strings.Repeat("x", int(limit)+(1<<20)) + `"` // a JSON string payload of limit + 1 MiB
	for _, q := range []string{"huge", "hugeauto"} {
		body := fmt.Sprintf(`{"items":[{"queue":%q,"partition":"p","transactionId":"small-1","payload":1},`+
			`{"queue":%q,"partition":"p","transactionId":"big","payload":%s}]}`, q, q, big)
		if status, out := n.post("/api/v1/push", []byte(body)); status != http.StatusCreated {
			t.Fatalf("push %s: %d %s", q, status, out)
		}
	}

	for _, c := range []struct{ queue, pop string }{
		{"huge", `{"queue":"huge","partition":"p","batch":10}`},
		{"hugeauto", `{"queue":"hugeauto","batch":10,"autoAck":true}`}, // any partition, auto-ack
	} {
		// The small message before it comes alone: the bound cuts the batch.
		var p popped
		if err := json.Unmarshal(n.natsAsk("pop", c.pop).Data, &p); err != nil || len(p.Messages) != 1 || p.Messages[0].TransactionID != "small-1" {
			t.Fatalf("%s: first pop: %+v %v", c.queue, p, err)
		}
		if p.LeaseID != "" {
			n.ackAll(p, "", nil)
		}
		msg := n.natsAsk("pop", c.pop)
		code, desc := msg.Header.Get("Nats-Service-Error-Code"), msg.Header.Get("Nats-Service-Error")
		for _, want := range []string{fmt.Sprintf("payload %d bytes", len(big)), fmt.Sprint(limit - 16<<10), "max_payload", "pop it over HTTP", `"big"`} {
			if code != "413" || !strings.Contains(desc, want) {
				t.Fatalf("%s: pop of the large message answered %q %q (%d bytes), want 413 naming %s", c.queue, code, desc, len(msg.Data), want)
			}
		}
		// Not leased, not consumed: HTTP gets it at once.
		status, got := n.popHTTP(c.queue, "")
		if status != http.StatusOK || len(got.Messages) != 1 || got.Messages[0].TransactionID != "big" || len(got.Messages[0].Data) != len(big) {
			t.Fatalf("%s: HTTP pop after the refusal: %d %d messages", c.queue, status, len(got.Messages))
		}
		n.ackAll(got, "", nil)
	}
	if v := metricValue(t, n, "queen_consumer_pops_too_large_total"); v != 2 {
		t.Fatalf("queen_consumer_pops_too_large_total = %v, want 2", v)
	}

	// A read of it over NATS: refused, naming the answer's size; HTTP reads it.
	msg := n.natsAsk("fetch", `{"queue":"huge","partition":"p","from":2}`)
	if desc := msg.Header.Get("Nats-Service-Error"); msg.Header.Get("Nats-Service-Error-Code") != "413" ||
		!strings.Contains(desc, "read it over HTTP") || !strings.Contains(desc, fmt.Sprint(limit)) {
		t.Fatalf("fetch of the large message: %q (%d bytes)", desc, len(msg.Data))
	}
	if v := metricValue(t, n, "queen_nats_answers_too_large_total"); v != 1 {
		t.Fatalf("queen_nats_answers_too_large_total = %v, want 1", v)
	}
	// A read from the start stops before it: a page fits, whatever maxBytes asks.
	var page struct {
		Messages []struct {
			TransactionID string `json:"transactionId"`
		} `json:"messages"`
		Next int64 `json:"next"`
	}
	msg = n.natsAsk("fetch", fmt.Sprintf(`{"queue":"huge","partition":"p","maxBytes":%d}`, 16<<20))
	if err := json.Unmarshal(msg.Data, &page); err != nil || len(page.Messages) != 1 || page.Next != 2 {
		t.Fatalf("fetch from 1: %v %s", err, msg.Header)
	}
	if status, out := n.get("/api/v1/messages?queue=huge&partition=p&from=2"); status != http.StatusOK || len(out) < len(big) {
		t.Fatalf("HTTP read: %d, %d bytes", status, len(out))
	}
}

// A NATS pop that says how long its requester waits (expiresMs) is never
// parked longer: it answers before the requester gives up, whatever its
// timeout asks.
func TestNATSPopParksNoLongerThanItsRequesterWaits(t *testing.T) {
	n := newNode(t, nodeOpts{})
	n.pushHTTP(items(item("waits", "p", "first")))
	var p popped
	if err := json.Unmarshal(n.natsAsk("pop", `{"queue":"waits","partition":"p"}`).Data, &p); err != nil || len(p.Messages) != 1 {
		t.Fatalf("pop: %+v %v", p, err)
	}
	n.ackAll(p, "", nil)
	// natsAsk waits 20 s; the pop asks to park 60 s, its requester waits 1 s.
	msg := n.natsAsk("pop", `{"queue":"waits","partition":"p","wait":true,"timeout":60000,"expiresMs":1000,"requestId":"r-1"}`)
	if len(msg.Data) != 0 || msg.Header.Get("Nats-Service-Error") != "" {
		t.Fatalf("parked pop answered %s %v", msg.Data, msg.Header)
	}
	if msg := n.natsAsk("pop", `{"queue":"waits","expiresMs":-1}`); msg.Header.Get("Nats-Service-Error-Code") != "400" ||
		!strings.Contains(msg.Header.Get("Nats-Service-Error"), "expiresMs") {
		t.Fatalf("negative expiresMs: %v", msg.Header)
	}
}

// A cancel (<prefix>.v1.pop.cancel) ends a parked pop, which then claims
// nothing, and hands back what an answered pop delivered when its
// requester lost the answer: the next consumer gets the message at once.
func TestNATSPopCancelLeavesNothingClaimed(t *testing.T) {
	n := newNode(t, nodeOpts{})
	n.pushHTTP(items(item("gone", "p", "m1")))
	// An answer the requester never read: the claim is committed, leased.
	if msg := n.natsAsk("pop", `{"queue":"gone","partition":"p","requestId":"lost-1"}`); len(msg.Data) == 0 {
		t.Fatal("the pop delivered nothing")
	}
	if status, _ := n.popHTTP("gone", "p"); status != http.StatusNoContent {
		t.Fatalf("the partition is not leased after the pop: %d", status)
	}
	if msg := n.natsAsk("pop.cancel", `{"requestId":"lost-1"}`); string(msg.Data) != `{"cancelled":true}` {
		t.Fatalf("cancel answered %s %v", msg.Data, msg.Header)
	}
	status, p := n.popHTTP("gone", "p")
	if status != http.StatusOK || len(p.Messages) != 1 || p.Messages[0].TransactionID != "m1" {
		t.Fatalf("after the cancel: %d %+v", status, p)
	}
	n.ackAll(p, "", nil)

	// A parked pop, cancelled: it answers, and a push after it is not
	// claimed for nobody.
	parkedBefore := metricValue(t, n, "queen_parked_reads")
	done := make(chan *nats.Msg, 1)
	sub, err := n.nc.ChanSubscribe(nats.NewInbox(), done)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := n.nc.PublishRequest(n.prefix+".v1.pop", sub.Subject, []byte(`{"queue":"gone","wait":true,"timeout":60000,"requestId":"parked-1"}`)); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the pop parked", 10*time.Second, func() bool { return metricValue(t, n, "queen_parked_reads") > parkedBefore })
	if msg := n.natsAsk("pop.cancel", `{"requestId":"parked-1"}`); string(msg.Data) != `{"cancelled":true}` {
		t.Fatalf("cancel of the parked pop answered %s %v", msg.Data, msg.Header)
	}
	select {
	case <-done: // answered (an error nobody reads), and no longer parked
	case <-time.After(20 * time.Second):
		t.Fatal("the cancelled pop is still parked")
	}
	n.pushHTTP(items(item("gone", "p", "m2")))
	status, p = n.popHTTP("gone", "p")
	if status != http.StatusOK || len(p.Messages) != 1 || p.Messages[0].TransactionID != "m2" {
		t.Fatalf("push after the cancel: %d %+v", status, p)
	}
	n.ackAll(p, "", nil)
	if v := metricValue(t, n, "queen_consumer_pop_cancels_total"); v != 2 {
		t.Fatalf("queen_consumer_pop_cancels_total = %v, want 2", v)
	}
	// A cancel that came before its pop: the pop claims nothing.
	if _, err := n.nc.Request(n.prefix+".v1.pop.cancel", []byte(`{"requestId":"early-1"}`), 200*time.Millisecond); err == nil {
		t.Fatal("a cancel of an unknown pop was answered")
	}
	n.pushHTTP(items(item("gone", "p", "m3")))
	if msg := n.natsAsk("pop", `{"queue":"gone","partition":"p","requestId":"early-1"}`); msg.Header.Get("Nats-Service-Error-Code") != "503" {
		t.Fatalf("a pop cancelled before it came: %s %v", msg.Data, msg.Header)
	}
	if status, p = n.popHTTP("gone", "p"); status != http.StatusOK || len(p.Messages) != 1 || p.Messages[0].TransactionID != "m3" {
		t.Fatalf("after a pop cancelled before it came: %d %+v", status, p)
	}
}
