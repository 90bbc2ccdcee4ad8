package leaf_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/embedded"
	"github.com/queenbridge/queenbridge/internal/leaf"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// hub is an in-process nats-server with a leafnode listener (embedded's:
// one user, a password of its own), as the bridge runs it.
type hub struct {
	ns           *embedded.NATS
	client, leaf string // host:port of the listeners, kept for a restart
	password     string
}

func startHub(t testing.TB) *hub {
	t.Helper()
	return startHubWith(t, embedded.NATSConfig{Listen: "127.0.0.1:-1"})
}

func startHubWith(t testing.TB, cfg embedded.NATSConfig) *hub {
	t.Helper()
	ns, err := embedded.StartNATS(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Stop)
	return &hub{ns: ns, client: strings.TrimPrefix(ns.ClientURL(), "nats://"),
		leaf: strings.TrimPrefix(ns.LeafURL(), "nats-leaf://"), password: ns.LeafPassword()}
}

func (h *hub) stop() { h.ns.Stop() }

// start starts the stopped server again on the same addresses with the
// same leaf password.
func (h *hub) start(t testing.TB) {
	t.Helper()
	var err error
	// The ports were released by stop; another process may take one in
	// between, which fails the test with the listener's error.
	h.ns, err = embedded.StartNATS(embedded.NATSConfig{Listen: h.client, LeafListen: h.leaf, LeafPassword: h.password})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.ns.Stop)
}

func (h *hub) config() leaf.Config {
	return leaf.Config{URL: "nats-leaf://" + h.leaf, User: embedded.LeafUser, Password: h.password, Name: "leaf-test"}
}

func (h *hub) dial(t testing.TB) *leaf.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := leaf.Dial(ctx, h.config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// client is a plain nats.go connection to the hub.
func (h *hub) natsClient(t testing.TB, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect("nats://"+h.client, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// subscribe subscribes nc to subject and waits until the leaf has heard
// of it (the hub's LS+ comes asynchronously).
func subscribe(t testing.TB, nc *nats.Conn, c *leaf.Conn, subject string) chan *nats.Msg {
	t.Helper()
	ch := make(chan *nats.Msg, 10000)
	if _, err := nc.ChanSubscribe(subject, ch); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	probe := strings.ReplaceAll(strings.ReplaceAll(subject, "*", "x"), ">", "x")
	testkit.WaitFor(t, "the leaf to hear of "+subject, 30*time.Second, func() bool { return c.Interested(probe) })
	return ch
}

func receive(t testing.TB, ch chan *nats.Msg) *nats.Msg {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(30 * time.Second):
		t.Fatal("no message within 30s")
		return nil
	}
}

// lostLog records what OnInterestLost reported; the reader goroutine
// appends, the test reads: the lock is for that.
type lostLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *lostLog) add(s string) {
	l.mu.Lock()
	l.seen = append(l.seen, s)
	l.mu.Unlock()
}

func (l *lostLog) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.seen, s)
}
