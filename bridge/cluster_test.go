package bridge_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/embedded"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// pushThroughEach pushes perNode one-item requests through each NATS
// server of the cluster at once, the k-th through server i being
// item(i, k), and fails the test unless every one is queued.
func pushThroughEach(t *testing.T, nodes []*embedded.NATS, perNode int, item func(i, k int) string) {
	t.Helper()
	var wg sync.WaitGroup
	for i, s := range nodes {
		wg.Add(1)
		go func(i int, url string) {
			defer wg.Done()
			nc, err := nats.Connect(url)
			if err != nil {
				t.Error(err)
				return
			}
			defer nc.Close()
			for k := 0; k < perNode; k++ {
				msg, err := nc.Request("queen.v1.push", []byte(items(item(i, k))), 10*time.Second)
				if err != nil {
					t.Errorf("push via node %d: %v", i, err)
					return
				}
				if rs := decodeResults(t, msg.Data); rs[0].Status != "queued" {
					t.Errorf("push via node %d: %+v", i, rs)
					return
				}
			}
		}(i, s.ClientURL())
	}
	wg.Wait()
}

// Retention runs while pushes continue: old segments go, newer ones stay,
// offsets go on, no push fails; a repeat of a removed original answers
// duplicate with the zero id (its transaction row outlives the segment for
// the dedup window).
func TestRetentionWhilePushing(t *testing.T) {
	n := newNode(t, nodeOpts{retain: 50 * time.Millisecond})
	if status, out := n.post("/api/v1/configure", []byte(`{"queue":"short","options":{"retentionSeconds":1,"dedupWindowSeconds":60}}`)); status != http.StatusOK {
		t.Fatalf("configure: %d %s", status, out)
	}
	orig := n.pushHTTP(items(item("short", "p0", "orig")))[0]
	var wg sync.WaitGroup
	var mu sync.Mutex
	pushed := map[string]int64{"p0": 1}
	stop := make(chan struct{})
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := fmt.Sprintf("p%d", w)
				r := n.pushHTTP(items(item("short", p, fmt.Sprintf("%d-%d", w, i))))[0]
				if r.Status != "queued" {
					t.Errorf("push during retention: %+v", r)
					return
				}
				mu.Lock()
				pushed[p]++
				if r.Offset != pushed[p] {
					t.Errorf("%s: offset %d, want %d", p, r.Offset, pushed[p])
				}
				mu.Unlock()
			}
		}(w)
	}
	waitUntil(t, "retention to remove the first segment", 30*time.Second, func() bool {
		return n.count(`SELECT count(*) FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id
			WHERE p.name = 'p0' AND s.base_offset = 1`) == 0
	})
	removed := metricValue(t, n, "queen_retention_segments_removed_total")
	waitUntil(t, "retention to go on removing while pushes continue", 30*time.Second, func() bool {
		return metricValue(t, n, "queen_retention_segments_removed_total") > removed
	})
	close(stop)
	wg.Wait()

	for p, want := range pushed {
		if last := n.count(`SELECT p.last_offset FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'short' AND p.name = $1`, p); last != want {
			t.Fatalf("%s: last_offset %d, pushed %d", p, last, want)
		}
		a := n.read("queue=short&partition=" + p + "&limit=1000")
		if len(a.Messages) == 0 || a.Next != want+1 {
			t.Fatalf("%s: read %d messages, next %d (pushed %d)", p, len(a.Messages), a.Next, want)
		}
		for i, m := range a.Messages { // what is left is the newest, dense, up to the end
			if m.Offset != want-int64(len(a.Messages))+1+int64(i) {
				t.Fatalf("%s: offsets not dense after retention", p)
			}
		}
	}
	if removed := metricValue(t, n, "queen_retention_segments_removed_total"); removed < 1 {
		t.Fatalf("retention metric %v", removed)
	}
	dup := n.pushHTTP(items(item("short", "p0", "orig")))[0]
	if dup.Status != "duplicate" || dup.Offset != orig.Offset || dup.MessageID != uuid.Nil.String() {
		t.Fatalf("repeat of a removed original: %+v", dup)
	}
}

// Three NATS servers in a cluster (routes on loopback) and two bridges on
// different nodes: pushes through every node are served by both bridges and
// stored exactly once; a read parked on one bridge is woken by a push the
// other answered.
func TestTwoBridgesOnANATSCluster(t *testing.T) {
	nodes := testkit.NATSCluster(t, 3)
	b1 := newNode(t, nodeOpts{natsURL: nodes[0].ClientURL(), prefix: "queen"})
	b2 := newNode(t, nodeOpts{natsURL: nodes[2].ClientURL(), prefix: "queen", dsn: b1.db.Pool().Config().ConnConfig.ConnString()})
	waitUntil(t, "both services to be visible from node b", 20*time.Second, func() bool {
		nc, err := nats.Connect(nodes[1].ClientURL())
		if err != nil {
			return false
		}
		defer nc.Close()
		sub, _ := nc.SubscribeSync(nats.NewInbox())
		defer sub.Unsubscribe()
		_ = nc.PublishRequest("$SRV.PING.queen-bridge", sub.Subject, nil)
		got := 0
		for got < 2 {
			if _, err := sub.NextMsg(500 * time.Millisecond); err != nil {
				break
			}
			got++
		}
		return got == 2
	})

	const perNode = 200
	pushThroughEach(t, nodes, perNode, func(i, k int) string {
		return item("clustered", fmt.Sprintf("p%d", k%5), fmt.Sprintf("n%d-%d", i, k))
	})
	served1 := metricValue(t, b1, `queen_push_requests_total{transport="nats"}`)
	served2 := metricValue(t, b2, `queen_push_requests_total{transport="nats"}`)
	t.Logf("bridge 1 served %.0f, bridge 2 served %.0f of %d pushes", served1, served2, 3*perNode)
	if served1 == 0 || served2 == 0 || served1+served2 != 3*perNode {
		t.Fatalf("bridges served %v and %v of %d", served1, served2, 3*perNode)
	}
	stored := storedTxids(t, b1, "clustered")
	if len(stored) != 3*perNode {
		t.Fatalf("%d distinct stored, want %d", len(stored), 3*perNode)
	}
	for tx, c := range stored {
		if c != 1 {
			t.Fatalf("%s stored %d times", tx, c)
		}
	}

	// a read parked on bridge 2, a push answered by bridge 1 (over HTTP)
	got := make(chan readAnswer, 1)
	go func() { got <- b2.read("queue=clustered&partition=pz&from=1&waitMs=10000") }()
	waitUntil(t, "the read to park", 10*time.Second, func() bool { return metricValue(t, b2, "queen_parked_reads") >= 1 })
	b1.pushHTTP(items(item("clustered", "pz", "wake-me")))
	if r := <-got; len(r.Messages) != 1 || r.Messages[0].TransactionID != "wake-me" {
		t.Fatalf("parked read on bridge 2: %+v", r)
	}
}

// Two bridges write one partition. A retry that reaches the bridge that did
// not write the original is still a duplicate: each bridge's p_verified only
// vouches for what it wrote or read back, so the other's writes are probed.
func TestDuplicatesAcrossBridges(t *testing.T) {
	a := newNode(t, nodeOpts{})
	b := newNode(t, nodeOpts{dsn: a.db.Pool().Config().ConnConfig.ConnString(), prefix: a.prefix})
	b.pushHTTP(items(item("shared", "p", "b1")))           // offset 1, by b
	orig := a.pushHTTP(items(item("shared", "p", "x")))[0] // offset 2, by a
	if r := b.pushHTTP(items(item("shared", "p", "x")))[0]; r.Status != "duplicate" || r.MessageID != orig.MessageID || r.Offset != 2 {
		t.Fatalf("retry on the other bridge: %+v, original %+v", r, orig)
	}
	b.pushHTTP(items(item("shared", "p", "b2"))) // offset 3: b sees a's offset 2 as foreign
	a.pushHTTP(items(item("shared", "p", "a2"))) // offset 4, by a
	for _, n := range []*node{a, b} {            // both, after gaps and gap reads
		for _, tx := range []string{"b1", "x", "b2", "a2"} {
			if r := n.pushHTTP(items(item("shared", "p", tx)))[0]; r.Status != "duplicate" {
				t.Fatalf("retry of %s: %+v", tx, r)
			}
		}
	}
	if stored := storedTxids(t, a, "shared"); len(stored) != 4 {
		t.Fatalf("stored %v", stored)
	}
}
