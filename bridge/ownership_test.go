package bridge_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/ownership"
	"github.com/queenbridge/queenbridge/segment"
)

// writeLog is a fusion sink that remembers which partitions this bridge
// sent segments of to PostgreSQL, whatever the ownership code believes.
type writeLog struct {
	fusion.Sink
	hashes fusion.HashSource
	mu     sync.Mutex // guards parts: flush goroutines add, the test reads
	parts  map[[3]string]int
}

func logWrites(into **writeLog) func(fusion.Sink) fusion.Sink {
	return func(s fusion.Sink) fusion.Sink {
		w := &writeLog{Sink: s, parts: map[[3]string]int{}}
		w.hashes, _ = s.(fusion.HashSource)
		*into = w
		return w
	}
}

func (w *writeLog) PushBundle(ctx context.Context, writes []segment.Write) ([]segment.Result, error) {
	w.mu.Lock()
	for _, wr := range writes {
		w.parts[[3]string{string(wr.Tenant[:]), wr.Queue, wr.Partition}]++
	}
	w.mu.Unlock()
	return w.Sink.PushBundle(ctx, writes)
}

func (w *writeLog) StoredHashes(ctx context.Context, pid, after, upTo int64, window int32) ([]segment.HashAt, error) {
	return w.hashes.StoredHashes(ctx, pid, after, upTo, window)
}

// foreign counts the segments w sent for partitions that owner (bucket ->
// bridge id) does not give to id.
func (w *writeLog) foreign(id string, owner []string) (foreign, total int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, n := range w.parts {
		var tenant [16]byte
		copy(tenant[:], k[0])
		if owner[ownership.BucketOf(tenant, k[1], k[2], len(owner))] != id {
			foreign += n
		}
		total += n
	}
	return foreign, total
}

// Three bridges on a three-node NATS cluster and one database: while the
// membership is stable every segment comes from its partition's owner, the
// others forward; a request over partitions of all three owners gets one
// answer in request order; each bridge keeps a third of the database budget.
// When one bridge leaves, the other two take its buckets.
func TestOwnersWriteTheirPartitions(t *testing.T) {
	nats3 := testkit.NATSCluster(t, 3)
	logs := make([]*writeLog, 3)
	var nodes []*node
	for i := range nats3 {
		o := nodeOpts{natsURL: nats3[i].ClientURL(), prefix: "queen", sink: logWrites(&logs[i]), beat: 250 * time.Millisecond}
		if i > 0 {
			o.dsn = nodes[0].db.Pool().Config().ConnConfig.ConnString()
		}
		nodes = append(nodes, newNode(t, o))
	}
	settled := func(want int) bool {
		for _, n := range nodes[:want] {
			if metricValue(t, n, "queen_ownership_bridges") != float64(want) {
				return false
			}
		}
		return true
	}
	waitUntil(t, "every bridge to see three", 20*time.Second, func() bool { return settled(3) })
	ids := []string{nodes[0].br.ID(), nodes[1].br.ID(), nodes[2].br.ID()}
	owner := ownership.Assign(ids, 1024)
	owned := 0.0
	for i, n := range nodes {
		owned += metricValue(t, n, "queen_ownership_owned_buckets")
		if c := n.fu.Stats().InFlightCeiling; c != 3 { // ceil(8 / 3)
			t.Fatalf("bridge %d: %d bundles in flight allowed, want its third of 8", i, c)
		}
	}
	if owned != 1024 {
		t.Fatalf("the bridges own %v buckets between them", owned)
	}

	// Load through every NATS node: one-item pushes over 60 partitions.
	const perNode = 150
	pushThroughEach(t, nats3, perNode, func(i, k int) string {
		return item("owned", fmt.Sprintf("p%d", (k*7+i)%60), fmt.Sprintf("n%d-%d", i, k))
	})

	// One request over partitions of all three owners, interleaved, with a
	// repeat inside it.
	var parts []string
	per := map[string]int{}
	for p := 0; len(parts) < 9; p++ {
		name := fmt.Sprintf("x%d", p)
		if o := owner[ownership.BucketOf([16]byte{}, "owned", name, 1024)]; per[o] < 3 {
			per[o]++
			parts = append(parts, name)
		}
	}
	var body []string
	for k := 0; k < 2; k++ {
		for _, p := range parts {
			body = append(body, item("owned", p, fmt.Sprintf("mixed-%s-%d", p, k)))
		}
	}
	body = append(body, item("owned", parts[4], "mixed-"+parts[4]+"-0"))
	answer := decodeResults(t, nodes[0].natsPush([]byte(items(body...)), "").Data)
	if len(answer) != len(body) {
		t.Fatalf("%d verdicts for %d items", len(answer), len(body))
	}
	for i, r := range answer {
		p, k := parts[i%len(parts)], i/len(parts)
		switch {
		case i == len(body)-1:
			if r.Status != "duplicate" || r.Offset != answer[4].Offset || r.MessageID != answer[4].MessageID {
				t.Fatalf("the repeat: %+v, its original %+v", r, answer[4])
			}
		case r.Status != "queued" || r.Partition != p || r.TransactionID != fmt.Sprintf("mixed-%s-%d", p, k) || r.Offset != int64(k+1):
			t.Fatalf("item %d: %+v, want %s queued at %d", i, r, p, k+1)
		}
	}

	for i, n := range nodes {
		foreign, total := logs[i].foreign(ids[i], owner)
		t.Logf("bridge %d wrote %d segments, %d foreign; forwarded %v groups, received %v", i, total, foreign,
			metricValue(t, n, "queen_forward_groups_total"), metricValue(t, n, "queen_forward_received_groups_total"))
		if foreign != 0 || total == 0 {
			t.Fatalf("bridge %d wrote %d segments of partitions it does not own (of %d)", i, foreign, total)
		}
		if metricValue(t, n, "queen_forward_groups_total") == 0 || metricValue(t, n, "queen_forward_received_groups_total") == 0 {
			t.Fatalf("bridge %d neither forwarded nor received", i)
		}
		if fb := metricValue(t, n, "queen_forward_fallback_groups_total"); fb != 0 {
			t.Fatalf("bridge %d wrote %v groups for lack of an owner while all were up", i, fb)
		}
	}
	stored := storedTxids(t, nodes[0], "owned")
	if len(stored) != 3*perNode+2*len(parts) {
		t.Fatalf("%d distinct stored, want %d", len(stored), 3*perNode+2*len(parts))
	}
	for tx, c := range stored {
		if c != 1 {
			t.Fatalf("%s stored %d times", tx, c)
		}
	}

	// One leaves: the other two split its buckets and their budget grows.
	nodes[2].stop()
	waitUntil(t, "two bridges to see two", 20*time.Second, func() bool { return settled(2) })
	if a, b := metricValue(t, nodes[0], "queen_ownership_owned_buckets"), metricValue(t, nodes[1], "queen_ownership_owned_buckets"); a+b != 1024 {
		t.Fatalf("after a leave the two own %v + %v buckets", a, b)
	}
	if moved := metricValue(t, nodes[0], "queen_ownership_bucket_moves_total"); moved == 0 {
		t.Fatal("no bucket moves counted")
	}
	if c := nodes[0].fu.Stats().InFlightCeiling; c != 4 {
		t.Fatalf("with two bridges the budget is %d, want 4", c)
	}
	for _, p := range parts {
		if r := nodes[1].pushHTTP(items(item("owned", p, "after-"+p)))[0]; r.Status != "queued" || r.Offset != 3 {
			t.Fatalf("%s after the leave: %+v", p, r)
		}
	}
}
