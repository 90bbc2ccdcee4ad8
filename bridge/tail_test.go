package bridge_test

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/ownership"
	"github.com/queenbridge/queenbridge/segment"
)

// Two bridges write the same partitions, their pushes alternating in runs
// (each on a subject prefix of its own, so neither forwards to the other:
// ownership would otherwise give each partition one writer), so each
// bridge's tail sees the other's segments as holes. Consumers of one
// group pop and acknowledge whole batches through both. Every message is
// delivered once, under one lease, and acknowledged once; per partition in
// offset order; the cursors end at the partitions' ends; and the tails
// served pops (otherwise this shows nothing about them).
func TestTailWithASecondWriter(t *testing.T) {
	dsn := testenv.NewDatabase(t)
	pool := &bridgePool{}
	pool.add(newNode(t, nodeOpts{dsn: dsn}))
	pool.add(newNode(t, nodeOpts{dsn: dsn}))
	const per = 400
	run := newTailRun(t, "tw", "g", []string{"p0", "p1", "p2", "p3"})
	run.produceAll(pool, per, func(_ int, rnd *rand.Rand) func() int {
		writer, left := 0, 0
		return func() int {
			// Runs of 1 to 4 requests through one bridge, then the other.
			if left == 0 {
				writer, left = 1-writer, 1+rnd.Intn(4)
			}
			left--
			return writer
		}
	})
	run.consumeAll(pool, 6)
	run.finish(t, pool)
	run.check(t, pool.nodes()[0], per)

	var hits float64
	for i, n := range pool.nodes() {
		h, m := metricValue(t, n, "queen_tail_hits_total"), metricValue(t, n, "queen_tail_misses_total")
		t.Logf("bridge %d: %v pops from the tail, %v refused or unusable", i, h, m)
		hits += h
		if e := metricValue(t, n, "queen_consumer_lease_expiries_total"); e != 0 {
			t.Errorf("bridge %d: %v claims took over an expired lease", i, e)
		}
	}
	t.Logf("%d acknowledgement calls", run.acks.Load())
	if hits == 0 {
		t.Fatal("no pop was served from the tail: the run shows nothing about it")
	}
}

// With ownership (one prefix: each partition has one writing bridge), the
// owner of half the partitions stops while producers and consumers go on,
// a new bridge starts in its place, then a third joins and later leaves:
// ownership moves away from a bridge's tail, to tails that start empty,
// and back to tails that held the partition before. Every message is
// delivered once, under one lease, acknowledged once, in offset order per
// partition; the cursors end at the ends; the tails served pops.
func TestTailWhileOwnershipMoves(t *testing.T) {
	dsn := testenv.NewDatabase(t)
	prefix := "t" + randHex(4)
	start := func() *node {
		return newNode(t, nodeOpts{dsn: dsn, prefix: prefix, beat: 250 * time.Millisecond})
	}
	pool := &bridgePool{}
	pool.add(start())
	pool.add(start())
	settled := func(want int) {
		t.Helper()
		waitUntil(t, fmt.Sprintf("every bridge to see %d", want), 30*time.Second, func() bool {
			for _, n := range pool.nodes() {
				if metricValue(t, n, "queen_ownership_bridges") != float64(want) {
					return false
				}
			}
			return true
		})
	}
	settled(2)
	// Three partitions of each bridge.
	ns := pool.nodes()
	owner := ownership.Assign([]string{ns[0].br.ID(), ns[1].br.ID()}, 1024)
	var parts []string
	per := map[string]int{}
	for p := 0; len(parts) < 6; p++ {
		name := fmt.Sprintf("p%d", p)
		if o := owner[ownership.BucketOf([16]byte{}, "to", name, 1024)]; per[o] < 3 {
			per[o]++
			parts = append(parts, name)
		}
	}
	const perPart = 300
	run := newTailRun(t, "to", "g", parts)
	run.produceAll(pool, perPart, func(_ int, rnd *rand.Rand) func() int { return func() int { return rnd.Intn(8) } })
	run.consumeAll(pool, 6)
	total := int64(perPart * len(parts))
	pushed := func(share int64) {
		t.Helper()
		waitUntil(t, fmt.Sprintf("%d%% of the messages pushed", share), 2*time.Minute, func() bool { return run.pushed.Load() >= total*share/100 || run.failed() })
	}
	pushed(25)
	hits, expiries := pool.leave(t, 1)
	t.Logf("a bridge left after %d messages pushed, having served %v pops from its tail", run.pushed.Load(), hits)
	pool.add(start())
	settled(2)
	pushed(50)
	pool.add(start())
	t.Logf("a third bridge joined after %d messages pushed", run.pushed.Load())
	settled(3)
	pushed(75)
	// It leaves again: its partitions go back to bridges whose tails
	// held them before, with the offsets it wrote as a hole.
	h, e := pool.leave(t, 2)
	hits, expiries = hits+h, expiries+e
	t.Logf("the third left after %d messages pushed, having served %v pops from its tail", run.pushed.Load(), h)
	settled(2)
	run.finish(t, pool)
	run.check(t, pool.nodes()[0], perPart)

	for i, n := range pool.nodes() {
		h, m := metricValue(t, n, "queen_tail_hits_total"), metricValue(t, n, "queen_tail_misses_total")
		t.Logf("bridge %d: %v pops from the tail, %v refused or unusable; %v bucket moves", i, h, m, metricValue(t, n, "queen_ownership_bucket_moves_total"))
		hits += h
		expiries += metricValue(t, n, "queen_consumer_lease_expiries_total")
	}
	if expiries != 0 {
		t.Errorf("%v claims took over an expired lease", expiries)
	}
	t.Logf("%d acknowledgement calls", run.acks.Load())
	if hits == 0 {
		t.Fatal("no pop was served from the tail: the run shows nothing about it")
	}
}

// check judges the run against PostgreSQL: every stored message was
// delivered once, under one lease, and acknowledged once; per partition
// the deliveries are offsets 1, 2, ... up to its last; every cursor is at
// its partition's end with no lease and what the last lease delivered
// ending there.
func (r *tailRun) check(t *testing.T, n *node, per int) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.errs {
		t.Error(e)
	}
	rows, err := n.db.Pool().Query(context.Background(), `SELECT p.name, s.base_offset, s.payload FROM queen.log_segments s
		JOIN queen.log_partitions p ON p.id = s.partition_id JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1`, r.queue)
	if err != nil {
		t.Fatal(err)
	}
	offset := map[string]int64{}  // transactionId -> offset
	last := map[string]int64{}    // partition -> last offset stored
	stored := map[string]string{} // transactionId -> partition
	for rows.Next() {
		var part string
		var base int64
		var blob []byte
		if err := rows.Scan(&part, &base, &blob); err != nil {
			t.Fatal(err)
		}
		frames, err := segment.UnpackAll(blob)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range frames {
			if _, ok := stored[f.TransactionID]; ok {
				t.Errorf("%s stored twice", f.TransactionID)
			}
			stored[f.TransactionID], offset[f.TransactionID] = part, base+int64(i)
			last[part] = max(last[part], base+int64(i))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if len(stored) != per*len(r.parts) {
		t.Errorf("%d messages stored, want %d", len(stored), per*len(r.parts))
	}
	for tx := range stored {
		if len(r.leases[tx]) != 1 || r.acked[tx] != 1 {
			t.Errorf("%s delivered under leases %v, acknowledged %d times", tx, r.leases[tx], r.acked[tx])
		}
	}
	for _, part := range r.parts {
		got := r.order[part]
		for i, tx := range got {
			if stored[tx] != part || offset[tx] != int64(i+1) {
				t.Errorf("partition %s: delivery %d is %s (stored in %q at %d), want offset %d", part, i, tx, stored[tx], offset[tx], i+1)
				break
			}
		}
		if int64(len(got)) != last[part] {
			t.Errorf("partition %s: %d deliveries, last offset %d", part, len(got), last[part])
		}
	}
	if bad := n.count(`SELECT count(*) FROM queen.consumer_cursors c JOIN queen.log_partitions p ON p.id = c.partition_id
		JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1 AND c.consumer_group = $2
		AND (c.cursor_offset <> p.last_offset OR c.delivered_to <> p.last_offset OR c.lease_id IS NOT NULL)`, r.queue, r.group); bad != 0 {
		t.Errorf("%d cursors not at their partition's end", bad)
	}
}
