package embedded_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/embedded"
)

func TestNATSRoundTrip(t *testing.T) {
	srv, err := embedded.StartNATS(embedded.NATSConfig{Listen: "-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
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
