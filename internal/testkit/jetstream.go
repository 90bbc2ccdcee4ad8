package testkit

import (
	"testing"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
)

// JetStream connects to url with opts and returns the connection and its
// JetStream client; the test's cleanup closes the connection. A failure
// fails the test.
func JetStream(t testing.TB, url string, opts ...nats.Option) (*nats.Conn, js.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	j, err := js.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, j
}
