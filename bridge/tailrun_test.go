package bridge_test

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The harness of the hot tail's end-to-end tests: producers and competing
// consumers of one group, going through several bridges, with what the
// bridges answered recorded and judged against what PostgreSQL holds.

// bridgePool is the bridges clients may use. A bridge leaves the pool
// before it stops, once the requests sent to it are answered: the tests
// are about what the tail serves while ownership moves, not about clients
// whose requests a stopping bridge refuses.
type bridgePool struct {
	mu      sync.Mutex
	members []*member
}

type member struct {
	n *node
	// use is held shared by each request to n, and taken by leave.
	use  sync.RWMutex
	gone bool // written under use's write lock
}

func (p *bridgePool) add(n *node) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.members = append(p.members, &member{n: n})
}

func (p *bridgePool) nodes() []*node {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*node
	for _, m := range p.members {
		out = append(out, m.n)
	}
	return out
}

// with runs fn with the i-th bridge of the pool (modulo its size).
func (p *bridgePool) with(i int, fn func(n *node)) {
	for {
		p.mu.Lock()
		m := p.members[i%len(p.members)]
		p.mu.Unlock()
		m.use.RLock()
		if !m.gone {
			fn(m.n)
			m.use.RUnlock()
			return
		}
		m.use.RUnlock()
	}
}

// leave takes the i-th bridge out of the pool, waits for the requests sent
// to it, reads its counters (its listener closes with it) and stops it.
func (p *bridgePool) leave(t *testing.T, i int) (hits, expiries float64) {
	p.mu.Lock()
	m := p.members[i]
	p.members = slices.Delete(p.members, i, i+1)
	p.mu.Unlock()
	m.use.Lock()
	defer m.use.Unlock()
	m.gone = true
	hits, expiries = metricValue(t, m.n, "queen_tail_hits_total"), metricValue(t, m.n, "queen_consumer_lease_expiries_total")
	m.n.stop()
	return hits, expiries
}

// tailRun records what the bridges answered producers and consumers of
// one group of one queue.
type tailRun struct {
	queue, group string
	parts        []string

	pushed atomic.Int64 // messages whose push was answered
	acks   atomic.Int64 // acknowledgement calls

	stop                 atomic.Bool // the consumers (and, when the test failed, the producers) stop
	producers, consumers sync.WaitGroup

	mu     sync.Mutex          // guards what follows
	order  map[string][]string // partition -> transactionIds, in delivery order
	leases map[string][]string // transactionId -> the leases it was delivered under
	acked  map[string]int      // transactionId -> successful acknowledgements
	errs   []string
}

// newTailRun records a run; when the test ends, its producers and
// consumers are stopped before the bridges they use (a failed test leaves
// them running otherwise).
func newTailRun(t *testing.T, queue, group string, parts []string) *tailRun {
	r := &tailRun{queue: queue, group: group, parts: parts, order: map[string][]string{}, leases: map[string][]string{}, acked: map[string]int{}}
	t.Cleanup(func() {
		r.stop.Store(true)
		r.producers.Wait()
		r.consumers.Wait()
	})
	return r
}

// produceAll starts a producer per partition; pick chooses the bridge of
// each request of partition i.
func (r *tailRun) produceAll(pool *bridgePool, per int, pick func(i int, rnd *rand.Rand) func() int) {
	for i, part := range r.parts {
		r.producers.Add(1)
		go func() {
			defer r.producers.Done()
			rnd := rand.New(rand.NewSource(int64(i)))
			r.produce(pool, part, per, rnd, pick(i, rnd))
		}()
	}
}

// consumeAll starts n consumers; consumer c's home is bridge c.
func (r *tailRun) consumeAll(pool *bridgePool, n int) {
	for c := 0; c < n; c++ {
		r.consumers.Add(1)
		go func() {
			defer r.consumers.Done()
			r.consume(pool, c, rand.New(rand.NewSource(int64(100+c))))
		}()
	}
}

func (r *tailRun) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) < 20 {
		r.errs = append(r.errs, fmt.Sprintf(format, args...))
	}
}

// produce pushes per messages to partition part, 1 to 3 a request, in
// order, each request through the bridge pick names. A request the bridge
// could not write (the machine is busy: a connection not had in time) is
// sent again, as clients do; the transactionIds make that safe.
func (r *tailRun) produce(pool *bridgePool, part string, per int, rnd *rand.Rand, pick func() int) {
	for k := 0; k < per && !r.stop.Load(); {
		n := min(1+rnd.Intn(3), per-k)
		var its []string
		for j := 0; j < n; j++ {
			its = append(its, item(r.queue, part, fmt.Sprintf("%s-%04d", part, k+j)))
		}
		for try := 0; ; try++ {
			var again bool
			pool.with(pick(), func(nd *node) {
				status, out, err := nd.send(http.MethodPost, "/api/v1/push", []byte(items(its...)))
				var rs []result
				if err == nil && (status == http.StatusServiceUnavailable || status == http.StatusInternalServerError) && try < 5 {
					again = true
					return
				}
				if err != nil || status != http.StatusCreated || json.Unmarshal(out, &rs) != nil || len(rs) != n {
					r.fail("push to %s: %d %s %v", part, status, out, err)
					return
				}
				for _, res := range rs {
					// duplicate: a forward that timed out was written by
					// the owner too, or a request sent again; the test
					// counts what is stored.
					if res.Status != "queued" && res.Status != "duplicate" && res.Status != "buffered" {
						r.fail("push %s: %+v", res.TransactionID, res)
					}
				}
			})
			if !again {
				break
			}
		}
		k += n
		r.pushed.Add(int64(n))
	}
}

// consume pops and acknowledges until stop: mostly through its home
// bridge, sometimes through another; mostly one named partition, sometimes
// any two; acknowledgements of the whole delivery in one batch, now and
// then through another bridge than the pop's.
func (r *tailRun) consume(pool *bridgePool, home int, rnd *rand.Rand) {
	for !r.stop.Load() {
		via := home
		if rnd.Intn(4) == 0 {
			via = rnd.Intn(8)
		}
		path := "/api/v1/pop/queue/" + url.PathEscape(r.queue)
		q := url.Values{"consumerGroup": {r.group}, "batch": {fmt.Sprint(1 + rnd.Intn(10))}, "wait": {"true"}, "timeout": {"50"}}
		if rnd.Intn(4) == 0 {
			q.Set("partitions", "2")
		} else {
			path += "/partition/" + url.PathEscape(r.parts[rnd.Intn(len(r.parts))])
		}
		var p popped
		var status int
		pool.with(via, func(n *node) {
			var out []byte
			var err error
			status, out, err = n.send(http.MethodGet, path+"?"+q.Encode(), nil)
			if err == nil && status == http.StatusServiceUnavailable && strings.Contains(string(out), "database unavailable") {
				status = 0 // no connection in time: nothing claimed; pop again, as clients do
				return
			}
			if err != nil || (status != http.StatusOK && status != http.StatusNoContent) || (status == http.StatusOK && json.Unmarshal(out, &p) != nil) {
				r.fail("pop %s: %d %s %v", path, status, out, err)
				status = 0
			}
		})
		if status != http.StatusOK {
			continue
		}
		r.delivered(p)
		if rnd.Intn(3) == 0 {
			via = rnd.Intn(8)
		}
		r.ack(pool, via, p)
	}
}

// delivered records a pop's messages before they are acknowledged: the
// next delivery of the partition needs that acknowledgement (no lease
// expires here), so per partition the record is in delivery order.
func (r *tailRun) delivered(p popped) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range p.Messages {
		if m.LeaseID == "" || m.ConsumerGroup != r.group {
			r.errs = append(r.errs, fmt.Sprintf("message %+v", m))
		}
		r.order[m.Partition] = append(r.order[m.Partition], m.TransactionID)
		r.leases[m.TransactionID] = append(r.leases[m.TransactionID], m.LeaseID)
	}
}

// ack acknowledges a delivery in one batch through n, and sends again the
// acknowledgements of partitions whose call got no connection in time
// (nothing was written for them).
func (r *tailRun) ack(pool *bridgePool, via int, p popped) {
	type ack struct {
		TransactionID string `json:"transactionId"`
		PartitionID   string `json:"partitionId"`
		LeaseID       string `json:"leaseId"`
		Status        string `json:"status"`
	}
	var acks []ack
	for _, m := range p.Messages {
		acks = append(acks, ack{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: m.LeaseID, Status: "completed"})
	}
	for try := 0; len(acks) > 0; try++ {
		body, _ := json.Marshal(map[string]any{"acknowledgments": acks, "consumerGroup": r.group})
		var status int
		var out []byte
		var err error
		pool.with(via, func(n *node) { status, out, err = n.send(http.MethodPost, "/api/v1/ack/batch", body) })
		var res []ackAnswer
		if err != nil || status != http.StatusOK || json.Unmarshal(out, &res) != nil || len(res) != len(acks) {
			r.fail("ack: %d %s %v", status, out, err)
			return
		}
		r.acks.Add(1)
		var again []ack
		r.mu.Lock()
		for i, a := range res {
			switch {
			case !a.Success && a.Error != nil && strings.Contains(*a.Error, "database unavailable") && try < 5:
				again = append(again, acks[i])
			case !a.Success || a.TransactionID != acks[i].TransactionID:
				why := ""
				if a.Error != nil {
					why = *a.Error
				}
				r.errs = append(r.errs, fmt.Sprintf("ack of %s: %q (%+v)", acks[i].TransactionID, why, a))
			default:
				r.acked[a.TransactionID]++
			}
		}
		r.mu.Unlock()
		acks = again
	}
}

// caughtUp: every partition of the queue has a cursor row of the group at
// its last offset, with no lease.
func (r *tailRun) caughtUp(t *testing.T, n *node) bool {
	behind := n.count(`SELECT count(*) FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
		LEFT JOIN queen.consumer_cursors c ON c.partition_id = p.id AND c.consumer_group = $2
		WHERE q.name = $1 AND (c.cursor_offset IS DISTINCT FROM p.last_offset OR c.lease_id IS NOT NULL)`, r.queue, r.group)
	return behind == 0 && n.count(`SELECT count(*) FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
		WHERE q.name = $1`, r.queue) == int64(len(r.parts))
}

// finish waits for the producers, then for the consumers to catch up, and
// stops them.
func (r *tailRun) finish(t *testing.T, pool *bridgePool) {
	t.Helper()
	r.producers.Wait()
	waitUntil(t, "the group to acknowledge everything", 2*time.Minute, func() bool {
		return r.failed() || r.caughtUp(t, pool.nodes()[0])
	})
	r.stop.Store(true)
	r.consumers.Wait()
}

func (r *tailRun) failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errs) > 0
}
