package jsconsume_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
	"github.com/queenbridge/queenbridge/embedded"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// The consumer wire tests read a stream ORDERS on orders.> with nats.go's
// jetstream package and the nats CLI, from a real JetStream server (file
// storage) and from a queen-bridge process declaring the same stream
// (QUEEN_JETSTREAM). The bridge runs as cmd/queen-bridge runs in
// production: it delivers over a leafnode connection to its NATS server
// (the embedded one's loopback listener, or QUEEN_NATS_LEAF_URL), which the
// process wires itself.

const (
	ordersStream = "ORDERS"
	ordersFilter = "orders.>"
)

// consumeTarget is where the consumer cases read: a real JetStream stream
// or a bridge. Both hold the stream ORDERS on orders.>; a case keeps to
// subjects of its own under it (filters), so cases share the stream.
type consumeTarget struct {
	name string
	url  string     // NATS URL the clients (and the CLI) connect to
	nc   *nats.Conn // reconnects forever: restarts keep the URL
	js   js.JetStream
	// bridge is the bridge process; nil for JetStream.
	bridge *bridgeProc
	// restart stops the target and starts it again on the same storage:
	// kill means without a chance to clean up (SIGKILL), which only a
	// bridge process is asked for.
	restart func(t *testing.T, kill bool)
}

// realJetStreamOrders starts a nats-server with JetStream file storage and
// creates ORDERS on orders.>. Its restart stops the server and starts it on
// the same port and store directory.
func realJetStreamOrders(t *testing.T) *consumeTarget {
	t.Helper()
	dir := t.TempDir()
	start := func(listen string) *embedded.NATS {
		ns, err := embedded.StartNATS(embedded.NATSConfig{Listen: listen, JetStreamDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ns.Stop)
		return ns
	}
	ns := start("127.0.0.1:-1")
	tg := &consumeTarget{name: "jetstream", url: ns.ClientURL()}
	tg.connect(t)
	if _, err := tg.js.CreateStream(deadline(t, time.Minute), js.StreamConfig{Name: ordersStream, Subjects: []string{ordersFilter}, Storage: js.FileStorage}); err != nil {
		t.Fatal(err)
	}
	tg.restart = func(t *testing.T, kill bool) {
		if kill {
			t.Fatal("a real JetStream server in the test's process is stopped, never killed")
		}
		ns.Stop()
		ns = start(strings.TrimPrefix(tg.url, "nats://"))
		tg.waitConnected(t)
	}
	return tg
}

// bridgeOrders runs a queen-bridge process with embedded NATS, its own
// database and QUEEN_JETSTREAM=ORDERS=orders.>. A restart of an embedded
// NATS would move the clients' port, so restarts use bridgeOnHub.
func bridgeOrders(t *testing.T, bin string) *consumeTarget {
	t.Helper()
	b := startBridgeProc(t, bin, "QUEEN_PG_DSN="+testenv.NewDatabase(t), "QUEEN_DATA_DIR="+t.TempDir(),
		"QUEEN_NATS_LISTEN=127.0.0.1:-1", "QUEEN_JETSTREAM="+ordersStream+"="+ordersFilter)
	tg := &consumeTarget{name: "bridge", url: b.nats, bridge: b}
	tg.connect(t)
	tg.restart = func(t *testing.T, _ bool) {
		t.Fatal("a bridge with embedded NATS is not restarted: its clients' URL would change")
	}
	return tg
}

// bridgeOnHub runs a queen-bridge process on an external NATS server (hub)
// that has a leafnode listener: QUEEN_NATS_URL and QUEEN_NATS_LEAF_URL, as
// an operator with an existing NATS deployment configures it. dsn is the
// database (bridges on one database share it). Its restart keeps the hub,
// so the clients stay connected while the bridge is gone.
func bridgeOnHub(t *testing.T, bin string, h *hub, dsn string, extra ...string) *consumeTarget {
	t.Helper()
	env := append([]string{"QUEEN_PG_DSN=" + dsn, "QUEEN_DATA_DIR=" + t.TempDir(), "QUEEN_NATS_URL=" + h.url, "QUEEN_NATS_LEAF_URL=" + h.leafURL, "QUEEN_NATS_LEAF_USER=" + embedded.LeafUser, "QUEEN_NATS_LEAF_PASSWORD=" + h.ns.LeafPassword(),
		"QUEEN_JETSTREAM=" + ordersStream + "=" + ordersFilter}, extra...)
	tg := &consumeTarget{name: "bridge", url: h.url, bridge: startBridgeProc(t, bin, env...)}
	tg.connect(t)
	tg.restart = func(t *testing.T, kill bool) {
		sig := syscall.SIGTERM
		if kill {
			sig = syscall.SIGKILL
		}
		err := tg.bridge.stop(t, sig)
		if !kill && err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, tg.bridge.Logs())
		}
		tg.bridge = startBridgeProc(t, bin, env...)
	}
	return tg
}

// connect opens the target's client connection, which reconnects without
// end, so that it outlives a restart of the target.
func (tg *consumeTarget) connect(t *testing.T) {
	t.Helper()
	tg.nc, tg.js = testkit.JetStream(t, tg.url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
}

func (tg *consumeTarget) waitConnected(t *testing.T) {
	t.Helper()
	testkit.WaitFor(t, "the client to reconnect", 60*time.Second, tg.nc.IsConnected)
}

// bridgeProc is a running queen-bridge and the addresses from its ready
// line.
type bridgeProc struct {
	*testkit.Process
	http string // host:port
	nats string // client URL of its embedded NATS; "" on an external one
	// exited: the test took the exit from Done (only the test's goroutine
	// reads or writes it).
	exited bool
}

// stop sends sig and returns the exit.
func (b *bridgeProc) stop(t *testing.T, sig os.Signal) error {
	t.Helper()
	b.exited = true
	return b.Stop(t, sig)
}

// startBridgeProc runs bin on ports the kernel picks and reads them from
// the ready line; the test's end stops it (SIGINT) if it still runs.
func startBridgeProc(t *testing.T, bin string, env ...string) *bridgeProc {
	t.Helper()
	p := testkit.StartBridge(t, bin, append([]string{"QUEEN_HTTP_ADDR=127.0.0.1:0"}, env...)...)
	b := &bridgeProc{Process: p}
	t.Cleanup(func() {
		if b.exited {
			return
		}
		_ = p.Cmd.Process.Signal(syscall.SIGINT) // fails only when it has exited: Done holds that
		select {
		case <-p.Done:
		case <-time.After(time.Minute):
			_ = p.Cmd.Process.Kill()
			<-p.Done
		}
	})
	for _, line := range strings.Split(p.Logs(), "\n") {
		var ready struct{ Message, HTTP, NATS string }
		if json.Unmarshal([]byte(line), &ready) != nil || ready.Message != "queen-bridge ready" {
			continue
		}
		b.http = ready.HTTP
		if u, ok := strings.CutPrefix(ready.NATS, "embedded "); ok {
			b.nats = u
		}
		return b
	}
	t.Fatalf("no ready line:\n%s", p.Logs())
	return nil
}

// hub is an external NATS server with a leafnode listener for bridges.
type hub struct {
	ns      *embedded.NATS
	url     string // clients
	leafURL string // bridges' leaf connections
}

// leafHubs starts n NATS servers, each with the leafnode listener the
// embedded server gives its own bridge (loopback, one user with a password
// of its own), routed into one cluster when n > 1, and waits for the routes.
func leafHubs(t *testing.T, n int) []*hub {
	t.Helper()
	var hubs []*hub
	for i := 0; i < n; i++ {
		cfg := embedded.NATSConfig{Listen: "127.0.0.1:-1", LeafListen: "127.0.0.1:-1", ServerName: fmt.Sprintf("hub%d", i)}
		if n > 1 {
			cfg.Cluster = "127.0.0.1:-1"
		}
		if i > 0 {
			cfg.Routes = []string{hubs[0].ns.ClusterURL()}
		}
		ns, err := embedded.StartNATS(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ns.Stop)
		hubs = append(hubs, &hub{ns: ns, url: ns.ClientURL(), leafURL: ns.LeafURL()})
	}
	for i, h := range hubs {
		testkit.WaitFor(t, fmt.Sprintf("hub %d's routes", i), 30*time.Second, func() bool { return h.ns.Server().NumRoutes() >= n-1 })
	}
	return hubs
}

// bridgeBinary builds cmd/queen-bridge for the test.
func bridgeBinary(t *testing.T) string { return testkit.BuildBridge(t, "../../cmd/queen-bridge") }

// deadline is a context the test's waits keep to: nothing in these tests
// waits on the network without one.
func deadline(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
