package leaf_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/embedded"
	"github.com/queenbridge/queenbridge/internal/leaf"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

func dialErr(t *testing.T, cfg leaf.Config) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := leaf.Dial(ctx, cfg)
	if err == nil {
		_ = c.Close()
		t.Fatalf("Dial(%s) connected", cfg.URL)
	}
	return err
}

// A first connection that cannot be made is Dial's error, saying why.
func TestDialSaysWhyItFailed(t *testing.T) {
	h := startHub(t)
	wrong := h.config()
	wrong.Password = "not-it"
	if err := dialErr(t, wrong); !errors.Is(err, leaf.ErrRefused) || !strings.Contains(err.Error(), "Authorization Violation") {
		t.Errorf("wrong password: %v, want ErrRefused with the hub's reason", err)
	}
	client := h.config()
	client.URL = "nats://" + h.client
	if err := dialErr(t, client); !strings.Contains(err.Error(), "not a leafnode listener") {
		t.Errorf("client port: %v", err)
	}
	for _, bad := range []string{"", "http://127.0.0.1:1", "nats-leaf://127.0.0.1"} {
		cfg := h.config()
		cfg.URL = bad
		if err := dialErr(t, cfg); !strings.Contains(err.Error(), "leaf:") {
			t.Errorf("URL %q: %v", bad, err)
		}
	}
	// Credentials in the URL serve when the Config has none.
	inURL := leaf.Config{URL: "nats-leaf://" + embedded.LeafUser + ":" + h.password + "@" + h.leaf}
	c, err := leaf.Dial(context.Background(), inURL)
	if err != nil {
		t.Fatalf("credentials in the URL: %v", err)
	}
	_ = c.Close()
}

// When the hub goes away, Publish fails at once with ErrNotConnected;
// when it is back, the Conn connects again by itself and delivers, its
// interest is the new server's, and a subscriber that did not come back
// is reported lost.
func TestReconnectsAfterTheHubRestarts(t *testing.T) {
	h := startHub(t)
	c := h.dial(t)
	var lost lostLog
	c.OnInterestLost(lost.add)
	keeper := h.natsClient(t, nats.MaxReconnects(-1), nats.ReconnectWait(20*time.Millisecond))
	goner := h.natsClient(t, nats.NoReconnect())
	kept := subscribe(t, keeper, c, "_INBOX.keep")
	subscribe(t, goner, c, "_INBOX.gone")

	h.stop()
	testkit.WaitFor(t, "Publish to fail while the hub is down", 30*time.Second, func() bool {
		return errors.Is(c.Publish("_INBOX.keep", "", nil, []byte("lost")), leaf.ErrNotConnected)
	})
	h.start(t)
	// The new connection's snapshot has no _INBOX.gone: reported when it
	// is installed.
	testkit.WaitFor(t, "OnInterestLost(_INBOX.gone) after the reconnection", 30*time.Second, func() bool { return lost.has("_INBOX.gone") })
	testkit.WaitFor(t, "the resubscribed keeper heard of", 30*time.Second, func() bool { return c.Interested("_INBOX.keep") })
	if c.Interested("_INBOX.gone") {
		t.Fatal("interest in a subject no one subscribes to any more")
	}
	if err := c.Publish("_INBOX.keep", "", nil, []byte("after")); err != nil {
		t.Fatal(err)
	}
	for {
		// Messages published before the hub went may still arrive
		// first; none published while it was down.
		m := receive(t, kept)
		if string(m.Data) == "lost" {
			t.Fatal("a message refused with ErrNotConnected arrived")
		}
		if string(m.Data) == "after" {
			break
		}
	}
}

// Close while the Conn is connecting again stops it: Close returns (it
// waits for the Conn's goroutines), and Publish says ErrClosed.
func TestCloseWhileReconnecting(t *testing.T) {
	h := startHub(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := leaf.Dial(ctx, h.config())
	if err != nil {
		t.Fatal(err)
	}
	h.stop()
	testkit.WaitFor(t, "the Conn to see the hub gone", 30*time.Second, func() bool {
		return errors.Is(c.Publish("x", "", nil, nil), leaf.ErrNotConnected)
	})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Publish("x", "", nil, nil); !errors.Is(err, leaf.ErrClosed) {
		t.Fatalf("Publish after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
