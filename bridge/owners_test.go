package bridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/client"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/ownership"
)

// threeOwners starts three bridges on a three-node NATS cluster and one
// database, each recording which partitions it wrote, and waits until each
// sees the three.
func threeOwners(t *testing.T, beat time.Duration) ([]*node, []*writeLog, []string) {
	t.Helper()
	nats3 := testkit.NATSCluster(t, 3)
	logs := make([]*writeLog, 3)
	var nodes []*node
	for i := range nats3 {
		o := nodeOpts{natsURL: nats3[i].ClientURL(), prefix: "queen", sink: logWrites(&logs[i]), beat: beat}
		if i > 0 {
			o.dsn = nodes[0].db.Pool().Config().ConnConfig.ConnString()
		}
		nodes = append(nodes, newNode(t, o))
	}
	waitUntil(t, "every bridge to see three", 20*time.Second, func() bool {
		for _, n := range nodes {
			if metricValue(t, n, "queen_ownership_bridges") != 3 {
				return false
			}
		}
		return true
	})
	return nodes, logs, []string{nodes[0].br.ID(), nodes[1].br.ID(), nodes[2].br.ID()}
}

// ownersTable reads the owners' table as a client does.
func ownersTable(t *testing.T, nc *nats.Conn) ownership.OwnersTable {
	t.Helper()
	msg, err := nc.Request(ownership.TableSubject("queen"), nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var tab ownership.OwnersTable
	if err := json.Unmarshal(msg.Data, &tab); err != nil {
		t.Fatalf("owners' table %s: %v", msg.Data, err)
	}
	return tab
}

func awareClient(t *testing.T, nc *nats.Conn) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{NATS: nc, Prefix: "queen", PartitionAware: true, OwnerTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// pushAll pushes every transactionId of txids (queue, partition from part)
// through c, 16 pushes at once, 1 to 3 items each, and fails unless every
// item is stored.
func pushAll(t *testing.T, c *client.Client, queue string, txids []string, part func(k int) string) {
	t.Helper()
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				var its []client.Item
				for j := k; j < len(txids) && j < k+1+k%3; j++ {
					its = append(its, client.Item{Queue: queue, Partition: part(j), TransactionID: txids[j], Payload: json.RawMessage(`{}`)})
				}
				rs, err := c.Push(context.Background(), its...)
				if err != nil {
					t.Errorf("push %d: %v", k, err)
					continue
				}
				for i, r := range rs {
					if !r.Stored() || r.TransactionID != its[i].TransactionID || r.Partition != its[i].Partition {
						t.Errorf("push %d item %d: %+v for %+v", k, i, r, its[i])
					}
				}
			}
		}()
	}
	for k := 0; k < len(txids); k += 1 + k%3 {
		next <- k
	}
	close(next)
	wg.Wait()
}

func txids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// checkStoredOnce fails unless exactly the transactionIds want are stored
// in queue, once each.
func checkStoredOnce(t *testing.T, n *node, queue string, want ...[]string) {
	t.Helper()
	stored := storedTxids(t, n, queue)
	total := 0
	for _, w := range want {
		total += len(w)
		for _, tx := range w {
			if stored[tx] != 1 {
				t.Fatalf("%s stored %d times", tx, stored[tx])
			}
		}
	}
	if len(stored) != total {
		t.Fatalf("%d distinct stored, want %d", len(stored), total)
	}
}

func forwardedGroups(t *testing.T, nodes []*node) (sum float64) {
	t.Helper()
	for _, n := range nodes {
		sum += metricValue(t, n, "queen_forward_groups_total")
	}
	return sum
}

// A partition-aware client against three bridges sends each part of a push
// to its owner: no bridge forwards a group and none writes a partition it
// does not own. Then the client is handed a wrong table (every bucket to
// the next bridge): the bridges forward, and still none writes a partition
// it does not own, and every item is stored once.
func TestPartitionAwareClientWritesWithoutForwards(t *testing.T) {
	nodes, logs, ids := threeOwners(t, 250*time.Millisecond)
	owner := ownership.Assign(ids, 1024)
	tab := ownersTable(t, nodes[0].nc)
	if len(tab.Bridges) != 3 || tab.Buckets != 1024 || len(tab.Owners) != 1024 {
		t.Fatalf("owners' table %+v", tab)
	}
	for b, ix := range tab.Owners {
		if br := tab.Bridges[ix]; br.ID != owner[b] || br.Subject != ownership.PushSubject("queen", owner[b]) {
			t.Fatalf("bucket %d: the table says %+v, the rule %s", b, br, owner[b])
		}
	}
	nc, err := nats.Connect(nodes[1].nc.ConnectedUrl())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := awareClient(t, nc)
	if v := c.Stats().TableVersion; v != tab.Version {
		t.Fatalf("the client's table is %q, the bridges' %q", v, tab.Version)
	}

	// One-item and multi-item pushes over 90 partitions; the Producer too.
	part := func(k int) string { return fmt.Sprintf("p%d", (k*7)%90) }
	aware := txids("aware", 400)
	pushAll(t, c, "aware", aware, part)
	produced := txids("produced", 200)
	var mu sync.Mutex
	var bad []string
	p := c.NewProducer(client.ProducerConfig{MaxItems: 20, OnResult: func(it client.Item, r client.Result, err error) {
		if err != nil || !r.Stored() {
			mu.Lock()
			bad = append(bad, fmt.Sprintf("%s: %+v %v", it.TransactionID, r, err))
			mu.Unlock()
		}
	}})
	for k, tx := range produced {
		if err := p.Add(context.Background(), client.Item{Queue: "aware", Partition: part(k), TransactionID: tx, Payload: json.RawMessage(`1`)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(context.Background()); err != nil || len(bad) > 0 {
		t.Fatalf("producer: %v %v", err, bad)
	}
	st := c.Stats()
	t.Logf("client: %+v", st)
	if f := forwardedGroups(t, nodes); f != 0 || st.Fallbacks != 0 || st.OwnerParts == 0 {
		t.Fatalf("a partition-aware client caused %v forwarded groups, %d fallbacks, %d parts to owners", f, st.Fallbacks, st.OwnerParts)
	}
	for i := range nodes {
		if foreign, total := logs[i].foreign(ids[i], owner); foreign != 0 || total == 0 {
			t.Fatalf("bridge %d wrote %d segments of partitions it does not own (of %d)", i, foreign, total)
		}
	}
	checkStoredOnce(t, nodes[0], "aware", aware, produced)

	// A wrong table, announced as the bridges would: every bucket's owner
	// is the next bridge.
	wrong := tab
	wrong.Version = "wrong"
	wrong.Owners = make([]int32, len(tab.Owners))
	for b, ix := range tab.Owners {
		wrong.Owners[b] = (ix + 1) % 3
	}
	data, _ := json.Marshal(wrong)
	if err := nodes[2].nc.Publish(ownership.TableChangedSubject("queen"), data); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the client to take the wrong table", 10*time.Second, func() bool { return c.Stats().TableVersion == "wrong" })
	misled := txids("misled", 300)
	pushAll(t, c, "aware", misled, part)
	if f := forwardedGroups(t, nodes); f == 0 {
		t.Fatal("a client with a wrong table caused no forwards")
	}
	for i, n := range nodes {
		if foreign, _ := logs[i].foreign(ids[i], owner); foreign != 0 {
			t.Fatalf("bridge %d wrote %d segments of partitions it does not own", i, foreign)
		}
		if fb := metricValue(t, n, "queen_forward_fallback_groups_total"); fb != 0 {
			t.Fatalf("bridge %d wrote %v forwarded groups itself while every owner was up", i, fb)
		}
	}
	checkStoredOnce(t, nodes[0], "aware", aware, produced, misled)
}

// kill ends a bridge as a crash would for the others: its NATS connection
// goes (no leave is said; its subscriptions vanish), then what is left of
// it is stopped without judging the errors of a bridge without NATS.
func (n *node) kill() {
	n.stopOnce.Do(func() {
		n.nc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = n.br.Stop(ctx)
		_ = n.fu.Stop(ctx)
		n.db.Close()
		n.sp.Close()
	})
}

// After an owner is killed, a partition-aware client's pushes still all
// land exactly once: parts for the dead bridge go to the shared subject
// (counted as fallbacks) until the survivors' new table reaches the client,
// which then sends nothing to the dead bridge.
func TestPartitionAwareClientSurvivesAKilledOwner(t *testing.T) {
	nodes, _, ids := threeOwners(t, time.Second)
	owner := ownership.Assign(ids, 1024)
	nc, err := nats.Connect(nodes[0].nc.ConnectedUrl())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := awareClient(t, nc)
	// Partitions of every owner, the killed one's among them.
	var parts []string
	per := map[string]int{}
	for p := 0; len(parts) < 60; p++ {
		name := fmt.Sprintf("k%d", p)
		if o := owner[ownership.BucketOf([16]byte{}, "killed", name, 1024)]; per[o] < 20 {
			per[o]++
			parts = append(parts, name)
		}
	}
	part := func(k int) string { return parts[k%len(parts)] }
	before := txids("before", 120)
	pushAll(t, c, "killed", before, part)

	nodes[2].kill()
	during := txids("during", 300)
	pushAll(t, c, "killed", during, part)
	if fb := c.Stats().Fallbacks; fb == 0 {
		t.Fatal("no fallbacks counted after the owner was killed")
	}
	waitUntil(t, "the survivors to drop the dead bridge", 20*time.Second, func() bool {
		return metricValue(t, nodes[0], "queen_ownership_bridges") == 2 && metricValue(t, nodes[1], "queen_ownership_bridges") == 2
	})
	tab := ownersTable(t, nodes[0].nc)
	waitUntil(t, "the client to take the survivors' table", 10*time.Second, func() bool { return c.Stats().TableVersion == tab.Version })
	fallbacks := c.Stats().Fallbacks
	after := txids("after", 120)
	pushAll(t, c, "killed", after, part)
	if st := c.Stats(); st.Fallbacks != fallbacks {
		t.Fatalf("fallbacks went on with the survivors' table: %d, then %d", fallbacks, st.Fallbacks)
	}
	t.Logf("client: %+v", c.Stats())
	checkStoredOnce(t, nodes[0], "killed", before, during, after)
}
