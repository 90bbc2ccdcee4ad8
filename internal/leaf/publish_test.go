package leaf_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/embedded"
	"github.com/queenbridge/queenbridge/internal/leaf"
)

const (
	ackReply = "$JS.ACK._.1.S.C.1.7.3.123.0.1"
	shown    = "orders.eu"
)

// A message sent with reply `$JS.ACK.…@<subject>` reaches the inbox it
// was sent to, shown on <subject> with the ack subject as its reply and
// its headers as sent: what nats.go's JetStream pull consumers require of
// every delivery. The same with JetStream on in the hub, as where the
// bridge's wire tests run beside a real stream.
func TestPublishDeliversWithAJetStreamAckReply(t *testing.T) {
	t.Run("plain", func(t *testing.T) { deliversWithAckReply(t, startHub(t)) })
	t.Run("jetstream", func(t *testing.T) {
		deliversWithAckReply(t, startHubWith(t, embedded.NATSConfig{Listen: "127.0.0.1:-1", JetStreamDir: t.TempDir()}))
	})
}

func deliversWithAckReply(t *testing.T, h *hub) {
	c := h.dial(t)
	nc := h.natsClient(t)
	inbox := subscribe(t, nc, c, "_INBOX.x")

	header := []byte("NATS/1.0\r\nNats-Msg-Id: order-1001\r\nX-Trace: a b\r\n\r\n")
	if err := c.Publish("_INBOX.x", ackReply+"@"+shown, header, []byte(`{"sku":"A-1"}`)); err != nil {
		t.Fatal(err)
	}
	m := receive(t, inbox)
	if m.Subject != shown || m.Reply != ackReply {
		t.Fatalf("subject %q reply %q, want %q and %q", m.Subject, m.Reply, shown, ackReply)
	}
	if got := m.Header.Get("Nats-Msg-Id"); got != "order-1001" {
		t.Errorf("Nats-Msg-Id %q", got)
	}
	if got := m.Header.Get("X-Trace"); got != "a b" {
		t.Errorf("X-Trace %q", got)
	}
	if string(m.Data) != `{"sku":"A-1"}` {
		t.Errorf("body %q", m.Data)
	}

	// Without a header: LMSG, no header on arrival.
	if err := c.Publish("_INBOX.x", ackReply+"@"+shown, nil, []byte("plain")); err != nil {
		t.Fatal(err)
	}
	m = receive(t, inbox)
	if m.Subject != shown || m.Reply != ackReply || string(m.Data) != "plain" || len(m.Header) != 0 {
		t.Fatalf("plain message: subject %q reply %q body %q header %v", m.Subject, m.Reply, m.Data, m.Header)
	}
}

// A status message (the header block's status line, no body) arrives as
// nats.go reads JetStream's: Status and Description headers, the rest of
// the block intact.
func TestPublishDeliversAStatusMessage(t *testing.T) {
	h := startHub(t)
	c := h.dial(t)
	nc := h.natsClient(t)
	inbox := subscribe(t, nc, c, "_INBOX.status")

	if err := c.Publish("_INBOX.status", "", []byte("NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 3\r\n\r\n"), nil); err != nil {
		t.Fatal(err)
	}
	m := receive(t, inbox)
	if got := m.Header.Get("Status"); got != "408" {
		t.Fatalf("Status %q (header %v)", got, m.Header)
	}
	if got := m.Header.Get("Description"); got != "Request Timeout" {
		t.Errorf("Description %q", got)
	}
	if got := m.Header.Get("Nats-Pending-Messages"); got != "3" {
		t.Errorf("Nats-Pending-Messages %q", got)
	}
	if len(m.Data) != 0 {
		t.Errorf("body %q, want none", m.Data)
	}
}

// Why the package exists: the same publish from a plain client is refused
// by the server, and the subscriber never sees it.
func TestClientPublishWithAJetStreamAckReplyIsRefused(t *testing.T) {
	h := startHub(t)
	errs := make(chan error, 10)
	pub := h.natsClient(t, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	nc := h.natsClient(t)
	inbox := make(chan *nats.Msg, 10)
	if _, err := nc.ChanSubscribe("_INBOX.y", inbox); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := pub.PublishMsg(&nats.Msg{Subject: "_INBOX.y", Reply: ackReply + "@" + shown, Data: []byte("refused")}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if !strings.Contains(err.Error(), "Permissions Violation for Publish with Reply") {
			t.Fatalf("the server said %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not refuse the publish")
	}
	// Published after the refused one on the same connection, so it
	// arrives after it would have.
	if err := pub.Publish("_INBOX.y", []byte("next")); err != nil {
		t.Fatal(err)
	}
	if m := receive(t, inbox); string(m.Data) != "next" {
		t.Fatalf("the subscriber got %q with reply %q first", m.Data, m.Reply)
	}
}

// Many goroutines publish at once: every message arrives, each
// goroutine's in its order (one subject per goroutine, and one subscriber
// sees them in the order the server routed them).
func TestConcurrentPublishesKeepEachCallersOrder(t *testing.T) {
	h := startHub(t)
	c := h.dial(t)
	nc := h.natsClient(t)
	in := subscribe(t, nc, c, "ord.>")
	const goroutines, each = 8, 500
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := c.Publish(fmt.Sprintf("ord.%d", g), "", nil, []byte(fmt.Sprint(i))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	next := map[string]int{}
	for range goroutines * each {
		m := receive(t, in)
		if want := fmt.Sprint(next[m.Subject]); string(m.Data) != want {
			t.Fatalf("%s: got message %s, want %s", m.Subject, m.Data, want)
		}
		next[m.Subject]++
	}
	for g := range goroutines {
		if n := next[fmt.Sprintf("ord.%d", g)]; n != each {
			t.Errorf("ord.%d: %d messages, want %d", g, n, each)
		}
	}
}

// What would break the protocol, or make the hub close the connection,
// is refused with ErrBadMessage and not sent; the connection goes on.
func TestPublishRefusesBadMessages(t *testing.T) {
	h := startHub(t)
	c := h.dial(t)
	nc := h.natsClient(t)
	in := subscribe(t, nc, c, "bad.>")
	big := make([]byte, nc.MaxPayload()+1)
	for _, tc := range []struct {
		name           string
		subject, reply string
		header, body   []byte
		want           string
	}{
		{"empty subject", "", "", nil, []byte("x"), "empty subject"},
		{"space in subject", "bad. x", "", nil, []byte("x"), "space"},
		{"newline in reply", "bad.x", "r\r\nPUB", nil, []byte("x"), "reply"},
		{"header without NATS/1.0", "bad.x", "", []byte("X: 1\r\n\r\n"), nil, "NATS/1.0"},
		{"header without its empty line", "bad.x", "", []byte("NATS/1.0\r\nX: 1\r\n"), nil, "empty line"},
		{"over max_payload", "bad.x", "", nil, big, "max_payload"},
	} {
		err := c.Publish(tc.subject, tc.reply, tc.header, tc.body)
		if !errors.Is(err, leaf.ErrBadMessage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrBadMessage naming %q", tc.name, err, tc.want)
		}
	}
	if err := c.Publish("bad.ok", "", nil, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	if m := receive(t, in); m.Subject != "bad.ok" {
		t.Fatalf("first message on %s (%q): a refused one was sent", m.Subject, m.Data)
	}
}

// What is published under a Hold stays in the buffer, the flusher not
// woken, until a Release, which hands the batch to the hub in order; a
// message published beside another goroutine's Hold waits for that
// Release. Without a hold a message wakes the flusher by itself.
func TestHoldKeepsABatchUntilRelease(t *testing.T) {
	h := startHub(t)
	c := h.dial(t)
	nc := h.natsClient(t)
	inbox := subscribe(t, nc, c, "_INBOX.hold")
	publish := func(body string) {
		t.Helper()
		if err := c.Publish("_INBOX.hold", "", nil, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}

	c.Hold()
	for i := range 3 {
		publish(fmt.Sprintf("m%d", i))
	}
	c.Hold() // a second holder: the first Release wakes the flusher all the same
	if !leaf.Held(c) {
		t.Fatal("a Publish under a Hold woke the flusher")
	}
	c.Release()
	if leaf.Held(c) {
		t.Fatal("a Release left the batch held")
	}
	for i := range 3 {
		if m := receive(t, inbox); string(m.Data) != fmt.Sprintf("m%d", i) {
			t.Fatalf("message %d: %q", i, m.Data)
		}
	}
	publish("beside")
	if !leaf.Held(c) {
		t.Fatal("a Publish beside the second holder's Hold woke the flusher")
	}
	c.Release()
	c.Release() // without a Hold: ends none
	if m := receive(t, inbox); string(m.Data) != "beside" {
		t.Fatalf("after the second release: %q", m.Data)
	}
	publish("free")
	if leaf.Held(c) {
		t.Fatal("a Publish with no Hold left its message held")
	}
	if m := receive(t, inbox); string(m.Data) != "free" {
		t.Fatalf("unheld: %q", m.Data)
	}
}
