package bridge_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
	"github.com/queenbridge/queenbridge/embedded"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/jetstream"
)

// jsTarget is what a JetStream producer publishes to: a running bridge with
// a stream definition, or a real JetStream stream on an embedded
// nats-server. The wire tests run against both, so that they show the
// bridge answers as JetStream does, not as the tests assume.
type jsTarget struct {
	name   string
	url    string     // NATS URL, for the CLI
	nc     *nats.Conn // the producer's connection
	bridge *node      // nil for JetStream
	// fresh makes a place for one case: a stream name and a subject in it
	// whose first message gets sequence 1.
	fresh func(t *testing.T) (stream, subject string)
	// stored lists what the case's place holds, in sequence order.
	stored func(t *testing.T, stream, subject string) []storedMsg
	// group is what sequences are dense over: the partition (bridge) or
	// the stream (JetStream).
	group func(subject string) string
}

// storedMsg is one stored message as a reader gets it back.
type storedMsg struct {
	seq   uint64
	msgID string // the Nats-Msg-Id it was published with (the transactionId)
	body  []byte // decoded from base64 where the read marks it so
}

func (tg *jsTarget) js(t *testing.T) js.JetStream {
	t.Helper()
	j, err := js.New(tg.nc)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func (tg *jsTarget) legacy(t *testing.T) nats.JetStreamContext {
	t.Helper()
	j, err := tg.nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// jsTargets are the bridge and a real JetStream server, each the test's own.
func jsTargets(t *testing.T) []*jsTarget {
	return []*jsTarget{bridgeTarget(t, nodeOpts{}), realJetStream(t, false)}
}

// forTargets runs body against each target, as a subtest named after it.
func forTargets(t *testing.T, body func(t *testing.T, tg *jsTarget)) {
	for _, tg := range jsTargets(t) {
		t.Run(tg.name, func(t *testing.T) { body(t, tg) })
	}
}

var caseSeq atomic.Int64

// bridgeTarget runs a bridge with one stream over its own subjects on the
// test binary's NATS; each case writes a partition of its own.
func bridgeTarget(t *testing.T, o nodeOpts) *jsTarget {
	t.Helper()
	tag := randHex(4)
	stream := "ORDERS_" + tag
	o.streams = append(o.streams, jetstream.Stream{Name: stream, Filters: []string{"js" + tag + ".>"}})
	if o.natsURL == "" {
		o.natsURL = testenv.NATSURL(t)
	}
	n := newNode(t, o)
	nc, err := nats.Connect(o.natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return &jsTarget{
		name: "bridge", url: o.natsURL, nc: nc, bridge: n,
		fresh: func(*testing.T) (string, string) {
			return stream, fmt.Sprintf("js%s.p%d", tag, caseSeq.Add(1))
		},
		stored: func(t *testing.T, stream, subject string) []storedMsg {
			return readPartition(t, n, stream, partitionOf(subject))
		},
		group: partitionOf,
	}
}

// partitionOf is the partition a subject js<tag>.<p> lands in.
func partitionOf(subject string) string {
	for i := 0; i < len(subject); i++ {
		if subject[i] == '.' {
			return subject[i+1:]
		}
	}
	return subject
}

// readPartition reads a whole partition over HTTP, as a consumer of the
// read API does, decoding what is marked base64.
func readPartition(t *testing.T, n *node, queue, partition string) []storedMsg {
	t.Helper()
	var out []storedMsg
	for from := int64(1); ; {
		status, body := n.get(fmt.Sprintf("/api/v1/messages?queue=%s&partition=%s&from=%d&limit=1000",
			url.QueryEscape(queue), url.QueryEscape(partition), from))
		var page struct {
			Messages []readMsg `json:"messages"`
			Next     int64     `json:"next"`
		}
		if status != 200 || json.Unmarshal(body, &page) != nil {
			t.Fatalf("read %s/%s: %d %s", queue, partition, status, body)
		}
		if len(page.Messages) == 0 {
			return out
		}
		for _, m := range page.Messages {
			out = append(out, storedMsg{seq: uint64(m.Offset), msgID: m.TransactionID, body: m.body(t)})
		}
		from = page.Next
	}
}

// readMsg is one message of a read answer.
type readMsg struct {
	Offset        int64           `json:"offset"`
	TransactionID string          `json:"transactionId"`
	Payload       json.RawMessage `json:"payload"`
	Encoding      string          `json:"encoding"`
}

// body is what the producer sent: the payload, or what its base64 holds.
func (m readMsg) body(t *testing.T) []byte {
	t.Helper()
	switch m.Encoding {
	case "":
		return m.Payload
	case "base64":
		var s string
		if err := json.Unmarshal(m.Payload, &s); err != nil {
			t.Fatalf("a base64 payload that is not a string: %s", m.Payload)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatalf("payload %s: %v", m.Payload, err)
		}
		return b
	}
	t.Fatalf("encoding %q", m.Encoding)
	return nil
}

// realJetStream starts a nats-server with JetStream (file storage) for the
// test; each case gets a stream of its own.
func realJetStream(t *testing.T, syncAlways bool) *jsTarget {
	t.Helper()
	ns, err := embedded.StartNATS(embedded.NATSConfig{Listen: "127.0.0.1:-1", JetStreamDir: t.TempDir(), SyncAlways: syncAlways})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Stop)
	nc, j := testkit.JetStream(t, ns.ClientURL())
	return &jsTarget{
		name: "jetstream", url: ns.ClientURL(), nc: nc,
		fresh: func(t *testing.T) (string, string) {
			n := caseSeq.Add(1)
			stream := fmt.Sprintf("S%d", n)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := j.CreateStream(ctx, js.StreamConfig{Name: stream, Subjects: []string{fmt.Sprintf("s%d.>", n)}, Storage: js.FileStorage}); err != nil {
				t.Fatal(err)
			}
			return stream, fmt.Sprintf("s%d.p", n)
		},
		stored: func(t *testing.T, stream, _ string) []storedMsg {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := j.Stream(ctx, stream)
			if err != nil {
				t.Fatal(err)
			}
			var out []storedMsg
			for seq := uint64(1); seq <= s.CachedInfo().State.LastSeq; seq++ {
				m, err := s.GetMsg(ctx, seq)
				if err != nil {
					t.Fatalf("message %d of %s: %v", seq, stream, err)
				}
				out = append(out, storedMsg{seq: seq, msgID: m.Header.Get("Nats-Msg-Id"), body: m.Data})
			}
			return out
		},
		group: func(string) string { return "the stream" },
	}
}
