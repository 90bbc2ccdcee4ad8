package bridge_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testkit"
)

// Section 12's features at once, over the same partitions, through one
// bridge over HTTP as Queen's clients call it:
//
//   - plain pushes into A (unique transactionIds "pN-k", one writer per
//     partition, so k's offset is k+1), each request also pushing to a
//     queue R whose retention is one second;
//   - a pipeline: workers pop a batch of A with group g and, in one
//     transaction, push each message to B in the partition of the same
//     name and acknowledge it on A; every fifth batch is first sent with an
//     acknowledgement of a message that does not exist, which must roll
//     the whole transaction back (the batch is then sent again without it);
//   - plain pops and acknowledgements of A by group "plain";
//   - group "seek" consuming A while two seekers move it to the end and
//     back, again and again;
//   - group "doomed" consuming A while two deleters delete it, again and
//     again, each delete sent together with a seek of the group to its end
//     (both lock all of the group's cursor rows);
//   - a queue C pushed to, popped and deleted, again and again, each
//     delete sent together with a transaction pushing to four of its
//     partitions;
//   - the retention step and the purge of deleted queues' segments, every
//     few milliseconds.
//
// Order is judged by what the database answered and stored, not by when a
// goroutine recorded it: A's offsets by the push answers, B's by reading B
// back by offset, deliveries by the offsets of the messages they hold.
// It ends with no error from any request or write (a PostgreSQL deadlock
// would be one, and PostgreSQL's own count of deadlocks in the database
// must be 0), every message of A in B exactly once and in A's offset order
// per partition (g's batches of one partition are sequential under its
// lease, so B's offsets follow A's), g at the end of every partition of A, the plain group's
// deliveries chaining without gap or repeat, nothing of A lost, and the
// seeked and deleted groups able to read all of A again, in order.
func TestSectionTwelveUnderConcurrency(t *testing.T) {
	sinkErrs := &bundleErrors{}
	// The test judges outcomes, not the product's fail-fast waits (a second
	// for a connection, five for a statement), which a busy machine can
	// exceed: a push that missed them would be answered buffered.
	n := newNode(t, nodeOpts{sink: sinkErrs.wrap, stmtTO: time.Minute, acqTO: time.Minute})
	const parts, perPart = 8, 250
	r := &concRun{n: n, parts: parts, perPart: perPart, total: parts * perPart, stop: make(chan struct{}),
		client:   &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		deadline: time.Now().Add(3 * time.Minute),
		outlet:   map[string]int64{}, deliveries: map[string][]delivery{}, shortOffsets: map[string][]int64{}}
	defer r.client.CloseIdleConnections()
	n.configureQueue(qShort, `{"retentionSeconds":1,"dedupWindowSeconds":60}`)

	var producers, consumers, background sync.WaitGroup
	for w := 0; w < parts/2; w++ {
		producers.Add(1)
		go func() { defer producers.Done(); r.produce(w, w+parts/2) }()
	}
	for k := 0; k < 3; k++ {
		consumers.Add(1)
		go func() { defer consumers.Done(); r.pipeline(rand.New(rand.NewSource(int64(k)))) }()
	}
	for k := 0; k < 2; k++ {
		consumers.Add(1)
		go func() { defer consumers.Done(); r.plain(rand.New(rand.NewSource(int64(10 + k)))) }()
	}
	// The seekers, the deleters and C's deleter go at the pace of the
	// consumer they disturb: one move per pop of it.
	seekPace, doomPace, churnPace := make(chan struct{}, 1), make(chan struct{}, 1), make(chan struct{}, 1)
	lease := "lease expired or not held"
	for _, fn := range []func(){
		func() { r.churned(groupSeek, seekPace, nil, lease) },
		func() {
			r.churned(groupDoomed, doomPace, []string{"subscriptionMode", "all"}, lease, "the consumer group has not popped this partition")
		},
		func() { r.seeker(seekPace, 0) }, func() { r.seeker(seekPace, 1) },
		func() { r.deleter(doomPace, 0) }, func() { r.deleter(doomPace, 1) },
		r.retention,
	} {
		background.Add(1)
		go func() { defer background.Done(); fn() }()
	}
	for _, fn := range []func(){func() { r.churnQueue(churnPace) }, func() { r.churnDeletes(churnPace) }} {
		background.Add(1)
		go func() { defer background.Done(); fn() }()
	}
	producers.Wait()
	consumers.Wait()
	// Retention has had a queue to work on all along; it must have removed
	// R's oldest segments before the run ends.
	testkit.WaitFor(t, "retention to remove R's first segments", time.Minute, func() bool {
		return r.failed() || n.count(`SELECT count(*) FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id
			JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1 AND s.base_offset = 1`, qShort) == 0
	})
	close(r.stop)
	background.Wait()
	for _, e := range r.errs {
		t.Error(e)
	}
	// A failed bundle or segment is spooled and answered buffered: none
	// may fail, C's racing its deletes included (docs/admin.md).
	for _, e := range sinkErrs.list() {
		t.Errorf("a write of %s/%s failed: %s", e.queue, e.partition, e.err)
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d transactions committed, %d rolled back on purpose; %d seeks, %d group deletes, %d queue deletes; "+
		"%d acknowledgements refused by them; %d retention steps",
		r.commits.Load(), r.rollbacks.Load(), r.seeks.Load(), r.groupDeletes.Load(), r.queueDeletes.Load(),
		r.refused.Load(), r.retentionSteps.Load())

	r.checkA(t)
	r.checkB(t)
	r.checkShort(t)
	// g acknowledged everything: its cursor at the end of every partition
	// of A, no lease held.
	if c := n.count(`SELECT count(*) FROM queen.consumer_cursors c JOIN queen.log_partitions p ON p.id = c.partition_id
		JOIN queen.queues q ON q.id = p.queue_id
		WHERE q.name = $1 AND c.consumer_group = $2 AND c.cursor_offset = $3 AND p.last_offset = $3 AND c.lease_id IS NULL`,
		qIntake, groupPipe, perPart); c != parts {
		t.Errorf("%d of %d partitions of A have g's cursor at their end, no lease held", c, parts)
	}
	r.checkChain(t, groupPlain)
	for _, g := range []string{groupSeek, groupDoomed} {
		r.checkRuns(t, g)
	}
	// What the transactions answered: committed and rolled back, each
	// counted once.
	if v := metricValue(t, n, `queen_transactions_total{outcome="committed"}`); v != float64(r.commits.Load()) {
		t.Errorf("committed counter %v, %d transactions committed", v, r.commits.Load())
	}
	if v := metricValue(t, n, `queen_transactions_total{outcome="rolled_back"}`); v != float64(r.rollbacks.Load()) {
		t.Errorf("rolled-back counter %v, %d transactions rolled back", v, r.rollbacks.Load())
	}
	// The groups that were seeked and deleted under load read all of A
	// again, in order: back to the beginning, and seeded anew.
	var seek cgSeekAnswer
	n.cgOK("POST", cgPath(groupSeek, "queues", qIntake, "seek"), `{"timestamp":"2000-01-01T00:00:00Z"}`, &seek)
	if seek.PartitionsUpdated != parts {
		t.Errorf("seek to the beginning: %+v", seek)
	}
	r.readsAllOfA(t, groupSeek)
	n.cgDelete(cgPath(groupDoomed))
	r.readsAllOfA(t, groupDoomed, "subscriptionMode", "all")
	if status, out := n.del("/api/v1/resources/queues/" + qChurn); status != http.StatusOK {
		t.Errorf("the last delete of C: %d %s", status, out)
	}
	r.checkNoDeadlocks(t)
}

const (
	qIntake, qOutlet, qChurn, qShort              = "intake", "outlet", "churn", "short" // A, B, C, R
	groupPipe, groupPlain, groupSeek, groupDoomed = "g", "plain", "seek", "doomed"
	minRounds                                     = 20 // seeks, deletes, C rounds each goroutine makes at least
)

// concRun is one run: what the bridge answered, recorded by the
// goroutines that asked, judged after they are all done.
type concRun struct {
	n                     *node
	parts, perPart, total int
	stop                  chan struct{} // closed: the background goroutines end
	client                *http.Client
	deadline              time.Time // the consumers give up, failing

	moved, acked        atomic.Int64 // A messages moved to B by g; acknowledged by plain
	commits, rollbacks  atomic.Int64
	seeks, groupDeletes atomic.Int64
	queueDeletes        atomic.Int64
	refused             atomic.Int64 // acknowledgements refused (seek, doomed, C)
	retentionSteps      atomic.Int64

	mu           sync.Mutex // guards what follows: appended to during the run, read after it
	errs         []string
	createdAt    []string              // A's push answers' createdAt: where seekers go back to
	outlet       map[string]int64      // A transactionId -> the offset its transaction answered in B
	deliveries   map[string][]delivery // by group
	shortOffsets map[string][]int64    // R partition -> offsets answered, in push order
}

// delivery is the messages one pop delivered of one partition, in order.
type delivery struct {
	partition string
	txids     []string
}

func (r *concRun) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) < 30 {
		r.errs = append(r.errs, fmt.Sprintf(format, args...))
	}
}

func (r *concRun) failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errs) > 0
}

// running: the consumers go on until they are done, a failure, or a
// deadline far beyond any healthy run (so a broken run fails instead of
// hanging).
func (r *concRun) running() bool {
	if time.Now().After(r.deadline) {
		r.fail("the run did not finish in time: %d of %d moved by g, %d acknowledged by plain", r.moved.Load(), r.total, r.acked.Load())
		return false
	}
	return !r.failed()
}

// stopped: the background goroutines make at least minRounds rounds, then
// go on until the consumers are done.
func (r *concRun) stopped(round int) bool {
	if r.failed() {
		return true
	}
	if round < minRounds {
		return false
	}
	select {
	case <-r.stop:
		return true
	default:
		return false
	}
}

// do sends a request; any goroutine may call it.
func (r *concRun) do(method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, r.n.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// pop pops queue (any partition) with the query q; ok is false for a 204
// and for a failure, which it records.
func (r *concRun) pop(queue string, q url.Values) (popped, bool) {
	path := "/api/v1/pop/queue/" + url.PathEscape(queue) + "?" + q.Encode()
	status, out, err := r.do(http.MethodGet, path, nil)
	var p popped
	switch {
	case err == nil && status == http.StatusNoContent:
		return p, false
	case err != nil || status != http.StatusOK || json.Unmarshal(out, &p) != nil || len(p.Messages) == 0:
		r.fail("pop %s: %d %s %v", path, status, out, err)
		return p, false
	}
	return p, true
}

// ack acknowledges a pop's messages in one batch under its lease, as
// Queen's client does, and answers one result per message.
func (r *concRun) ack(p popped, group string) ([]ackAnswer, bool) {
	type ack struct {
		TransactionID string `json:"transactionId"`
		PartitionID   string `json:"partitionId"`
		LeaseID       string `json:"leaseId"`
		Status        string `json:"status"`
	}
	acks := make([]ack, len(p.Messages))
	for i, m := range p.Messages {
		acks[i] = ack{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: m.LeaseID, Status: "completed"}
	}
	body, _ := json.Marshal(map[string]any{"acknowledgments": acks, "consumerGroup": group})
	status, out, err := r.do(http.MethodPost, "/api/v1/ack/batch", body)
	var res []ackAnswer
	if err != nil || status != http.StatusOK || json.Unmarshal(out, &res) != nil || len(res) != len(acks) {
		r.fail("ack of %s: %d %s %v", group, status, out, err)
		return nil, false
	}
	return res, true
}

// record notes a pop's deliveries of group, one per partition.
func (r *concRun) record(group string, p popped) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at := map[string]int{}
	for _, m := range p.Messages {
		i, ok := at[m.Partition]
		if !ok {
			i = len(r.deliveries[group])
			at[m.Partition] = i
			r.deliveries[group] = append(r.deliveries[group], delivery{partition: m.Partition})
		}
		d := &r.deliveries[group][i]
		d.txids = append(d.txids, m.TransactionID)
	}
}
