package embedded_test

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/embedded"
)

// natsWithClient starts an embedded server on a free port and connects a
// client to it; both end with the test.
func natsWithClient(t *testing.T) (*embedded.NATS, *nats.Conn) {
	t.Helper()
	srv, err := embedded.StartNATS(embedded.NATSConfig{Listen: "-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return srv, nc
}

func TestNATSRoundTrip(t *testing.T) {
	srv, nc := natsWithClient(t)
	if _, err := nc.Subscribe("echo", func(m *nats.Msg) { _ = m.Respond(append([]byte("re:"), m.Data...)) }); err != nil {
		t.Fatal(err)
	}
	msg, err := nc.Request("echo", []byte("hi"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if string(msg.Data) != "re:hi" {
		t.Fatalf("got %q", msg.Data)
	}
	srv.Stop()
	srv.Stop() // idempotent
	if srv.Server().Running() {
		t.Fatal("server still running after Stop")
	}
}

func TestNATSBadListen(t *testing.T) {
	if _, err := embedded.StartNATS(embedded.NATSConfig{Listen: "nope"}); err == nil {
		t.Fatal("want an error for a listen address without a port")
	}
}

// A client address some other process listens on is refused with the
// address and the reason, as soon as nats-server fails to listen; the
// readiness wait alone would only say "not ready" once ReadyTimeout passed.
func TestNATSBusyPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := l.Addr().String()
	_, err = embedded.StartNATS(embedded.NATSConfig{Listen: addr, ReadyTimeout: 20 * time.Second})
	if !errors.Is(err, embedded.ErrNATSListen) {
		t.Fatalf("start on a busy port: %v, want ErrNATSListen", err)
	}
	if msg := err.Error(); !strings.Contains(msg, addr) || !strings.Contains(msg, "address already in use") {
		t.Fatalf("the error does not name %s and the port in use: %v", addr, err)
	}
}

// The embedded server keeps no subject-match cache: a JetStream consumer's
// every ack subject is new, so a cache would only fill and be swept.
// Messages to many subjects leave it empty.
func TestNATSKeepsNoSubjectCache(t *testing.T) {
	srv, nc := natsWithClient(t)
	got := make(chan *nats.Msg, 100)
	if _, err := nc.ChanSubscribe("ack.>", got); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		if err := nc.Publish(fmt.Sprintf("ack.%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		select {
		case <-got:
		case <-time.After(10 * time.Second):
			t.Fatal("a message did not arrive")
		}
	}
	sz, err := srv.Server().Subsz(nil)
	if err != nil {
		t.Fatal(err)
	}
	if sz.NumCache != 0 || sz.NumMatches == 0 {
		t.Fatalf("%d subjects cached after %d matches, want none cached", sz.NumCache, sz.NumMatches)
	}
}
