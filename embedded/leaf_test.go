package embedded_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/embedded"
	"github.com/queenbridge/queenbridge/internal/leaf"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// The embedded server has a leafnode listener on loopback that takes the
// bridge's leaf user with the password made at start, and no one else;
// over it a message with a $JS.ACK reply reaches a client.
func TestNATSLeafListenerIsTheBridges(t *testing.T) {
	ns, err := embedded.StartNATS(embedded.NATSConfig{Listen: "-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Stop()
	u, err := url.Parse(ns.LeafURL())
	if err != nil || u.Scheme != "nats-leaf" || u.Hostname() != "127.0.0.1" || u.Port() == "" || u.User != nil {
		t.Fatalf("LeafURL %q: want nats-leaf://127.0.0.1:port without credentials", ns.LeafURL())
	}
	if len(ns.LeafPassword()) < 32 {
		t.Fatalf("leaf password of %d characters", len(ns.LeafPassword()))
	}
	other, err := embedded.StartNATS(embedded.NATSConfig{Listen: "-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Stop()
	if other.LeafPassword() == ns.LeafPassword() || other.LeafURL() == ns.LeafURL() {
		t.Fatal("two servers share a leaf password or a leaf port")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, cfg := range []leaf.Config{
		{URL: ns.LeafURL()},
		{URL: ns.LeafURL(), User: embedded.LeafUser, Password: "guess"},
		{URL: ns.LeafURL(), User: "someone", Password: ns.LeafPassword()},
	} {
		if c, err := leaf.Dial(ctx, cfg); !errors.Is(err, leaf.ErrRefused) {
			if c != nil {
				_ = c.Close()
			}
			t.Errorf("leaf as %q with password %q: %v, want refused", cfg.User, cfg.Password, err)
		}
	}

	c, err := leaf.Dial(ctx, leaf.Config{URL: ns.LeafURL(), User: embedded.LeafUser, Password: ns.LeafPassword()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("_INBOX.e")
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the leaf to hear of _INBOX.e", 30*time.Second, func() bool { return c.Interested("_INBOX.e") })
	if err := c.Publish("_INBOX.e", "$JS.ACK._.1.S.C.1.7.3.123.0.1@orders.eu", nil, []byte("m")); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != "orders.eu" || m.Reply != "$JS.ACK._.1.S.C.1.7.3.123.0.1" {
		t.Fatalf("subject %q reply %q", m.Subject, m.Reply)
	}
}

// A configuration file with a leafnodes listener of its own is refused:
// the embedded server's is the bridge's. One that solicits remotes (the
// server as another hub's leaf) is not a listener and starts.
func TestNATSConfigWithALeafListenerIsRefused(t *testing.T) {
	dir := t.TempDir()
	listen := filepath.Join(dir, "listen.conf")
	if err := os.WriteFile(listen, []byte("leafnodes { listen: \"127.0.0.1:-1\" }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ns, err := embedded.StartNATS(embedded.NATSConfig{Listen: "-1", ConfigFile: listen}); err == nil || !strings.Contains(err.Error(), "leafnodes listener") {
		if ns != nil {
			ns.Stop()
		}
		t.Fatalf("a config with its own leafnodes listener: %v", err)
	}

	hub, err := embedded.StartNATS(embedded.NATSConfig{Listen: "-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Stop()
	remote := filepath.Join(dir, "remote.conf")
	hubURL := strings.Replace(hub.LeafURL(), "//", "//"+embedded.LeafUser+":"+hub.LeafPassword()+"@", 1)
	if err := os.WriteFile(remote, []byte("leafnodes { remotes [ { url: \""+hubURL+"\" } ] }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ns, err := embedded.StartNATS(embedded.NATSConfig{Listen: "-1", ConfigFile: remote})
	if err != nil {
		t.Fatalf("a config with leafnode remotes: %v", err)
	}
	defer ns.Stop()
	testkit.WaitFor(t, "the server to join the hub as its leaf", 30*time.Second, func() bool { return hub.Server().NumLeafNodes() == 1 })
	if ns.LeafURL() == "" {
		t.Fatal("no leaf URL beside remotes")
	}
}

// With LeafAccounts, each named account of the configuration gets a leaf
// user bound to it with a password of its own, beside the bridge's user
// of the default account; an account the file does not define is refused
// by name.
func TestNATSLeafUsersPerAccount(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "accounts.conf")
	if err := os.WriteFile(conf, []byte("accounts { A { users [ { user: a, password: pa } ] }, B { users [ { user: b, password: pb } ] } }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ns, err := embedded.StartNATS(embedded.NATSConfig{Listen: "-1", ConfigFile: conf, LeafAccounts: []string{"A", "NOPE"}}); err == nil || !strings.Contains(err.Error(), `"NOPE"`) {
		if ns != nil {
			ns.Stop()
		}
		t.Fatalf("a leaf user for an account the file lacks: %v", err)
	}
	ns, err := embedded.StartNATS(embedded.NATSConfig{Listen: "-1", ConfigFile: conf, LeafAccounts: []string{"A", "B"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Stop()
	logins := ns.LeafLogins()
	if len(logins) != 2 || logins[0].Account != "A" || logins[1].Account != "B" || logins[0].User == logins[1].User ||
		len(logins[0].Password) < 32 || logins[0].Password == logins[1].Password || logins[0].Password == ns.LeafPassword() {
		t.Fatalf("leaf logins %d: want A's and B's, distinct users and passwords", len(logins))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dial := func(user, password string) *leaf.Conn {
		t.Helper()
		c, err := leaf.Dial(ctx, leaf.Config{URL: ns.LeafURL(), User: user, Password: password})
		if err != nil {
			t.Fatalf("leaf as %s: %v", user, err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	if c, err := leaf.Dial(ctx, leaf.Config{URL: ns.LeafURL(), User: logins[0].User, Password: logins[1].Password}); !errors.Is(err, leaf.ErrRefused) {
		if c != nil {
			_ = c.Close()
		}
		t.Fatalf("A's user with B's password: %v, want refused", err)
	}
	global, inA := dial(embedded.LeafUser, ns.LeafPassword()), dial(logins[0].User, logins[0].Password)
	nc, err := nats.Connect(ns.ClientURL(), nats.UserInfo("a", "pa"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.SubscribeSync("_INBOX.acc"); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "A's leaf to hear of A's inbox", 30*time.Second, func() bool { return inA.Interested("_INBOX.acc") })
	if global.Interested("_INBOX.acc") {
		t.Fatal("the default account's leaf sees account A's inbox")
	}
}
