package pgwire_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/cursors"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/storage"
)

// The differential test of the pop. Three statements claim and deliver a
// partition for a group: consumer_pop_v1 (a group's first pop of a
// partition, and windowBuffer queues), popKnownSQL (every other pop through
// PostgreSQL) and the hot tail's claim (popTailSQL, and popTailOneSQL for a
// call of one), which delivers from the bridge's memory. They must give one
// answer. Each side is a database of its own, driven by the same history
// (pushes, pops, acknowledgements, expiries, deletes, ageing, retention):
//
//   - function: every pop is one call of consumer_pop_v1 (by partition id,
//     or by queue and partition name);
//   - known: popKnownSQL, and consumer_pop_v1 where it answers "general"
//     (which it must do exactly for a first pop or a windowBuffer queue);
//   - tail-one, tail-arrays: a cursors.Tail fed with the pushes' commits
//     and told the cursors as the consume room tells it; what it takes is
//     claimed (popTailOneSQL for one claim on tail-one, popTailSQL
//     otherwise), and a refused claim pops through PostgreSQL as the room
//     does (popKnownSQL, then consumer_pop_v1).
//
// Every pop must answer alike on every side (status, partition, offsets,
// messages, tombstoned offsets, expired lease, lease kept), record the
// queue's lease time, and leave the same cursor rows and subscriptions; a
// tail claim must apply exactly when the other pops deliver what it took
// (and its queue neither delays nor windows messages, which it leaves to
// PostgreSQL by design).
//
// Time is the test's: a segment is fresh (inside every delayedProcessing and
// windowBuffer here, 3600 s, and retention's 86400 s) until an "age" step
// dates every fresh segment to a moment of 2000-01-01, one second after the
// previous age step's; a lease lives until an "expire" step ends it (each
// pop's lease is pushed a day further once its length is checked).

// popDiffSides names the sides; sides[0] is the reference.
var popDiffSides = []string{"function", "known", "tail-one", "tail-arrays"}

const (
	popDiffSeeds = 12
	popDiffSteps = 70
	// popDiffFrom is the 'from' group's subscription time: between the
	// second and the third age step's segments.
	popDiffFrom = "2000-01-01T00:00:02.5Z"
)

var popDiffEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// pdQueue is a queue of the histories, with what its options make the pop
// do.
type pdQueue struct {
	name          string
	leaseTime     int  // the lease length every claim must record
	delay, window bool // delayedProcessing, windowBuffer (3600 s)
	upd           storage.QueueUpdate
}

func pdQueues() []pdQueue {
	other := func(kv ...string) map[string]json.RawMessage {
		m := map[string]json.RawMessage{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = json.RawMessage(kv[i+1])
		}
		return m
	}
	day := int32(86400)
	return []pdQueue{
		{name: "pd.plain", leaseTime: 300}, // no options: every default
		{name: "pd.lease", leaseTime: 120, upd: storage.QueueUpdate{Other: other("leaseTime", "120", "retryLimit", "1")}},
		{name: "pd.delay", leaseTime: 300, delay: true, upd: storage.QueueUpdate{Other: other("delayedProcessing", "3600")}},
		{name: "pd.window", leaseTime: 300, window: true, upd: storage.QueueUpdate{Other: other("windowBuffer", "3600")}},
		{name: "pd.ret", leaseTime: 300, upd: storage.QueueUpdate{RetentionSeconds: &day}},
		{name: "pd.keep", leaseTime: 300, upd: storage.QueueUpdate{RetentionSeconds: &day, Other: other("retainUnconsumed", "true")}},
	}
}

// pdGroups are the groups of the histories, each with the subscription its
// first pop of a queue asks for.
var pdGroups = []string{pgwire.QueueMode, "all", "new", "from"}

func pdSubscription(group string) (mode string, from time.Time) {
	switch group {
	case "new":
		return "new", time.Time{}
	case "from":
		at, _ := time.Parse(time.RFC3339Nano, popDiffFrom)
		return "", at
	}
	return "all", time.Time{}
}

var pdPartitions = []string{"p0", "p1", "p2"}

// The other tenant: it has no queue, so a pop of a partition id of the
// histories' tenant finds nothing.
var pdTenant, pdStranger = tenancy.TenantID{}, tenancy.TenantID{9}

func TestPopStatementsAgree(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cov := &popCoverage{n: map[string]int{}}
	t.Run("histories", func(t *testing.T) {
		for _, h := range popHistories {
			t.Run(h.name, func(t *testing.T) {
				t.Parallel()
				r := newPopDiff(ctx, t, h.name, 0, cov)
				h.run(r)
				t.Logf("%s", strings.Join(r.history, "\n"))
			})
		}
		for seed := int64(1); seed <= popDiffSeeds; seed++ {
			t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
				t.Parallel()
				newPopDiff(ctx, t, fmt.Sprint("seed ", seed), seed, cov).random()
			})
		}
	})
	if t.Failed() {
		return
	}
	t.Logf("coverage: %v", cov.n)
	// The histories must have reached every case, or the agreement says
	// little.
	for _, k := range []string{
		"delivered", "empty", "leased", "window", "missing", "auto-ack", "by name", "several partitions",
		"stepped over tombstones", "tombstones left out", "expired lease taken over", "delayed", "retention removed the first segments",
		"first pop: " + pgwire.QueueMode, "first pop: all", "first pop: new", "first pop: from",
		"known: general for a first pop", "known: general for windowBuffer",
		"tail: applied", "tail: applied one", "tail: applied several", "tail: applied over an expired lease", "tail: applied auto-ack",
		"tail: prefix of the partition",
		"tail refused: options", "tail refused: leased", "tail refused: stale cursor", "tail refused: tombstones",
		"tail refused: retention", "tail refused: tenant",
		"ack: released", "ack: retry", "ack: foreign",
	} {
		if cov.n[k] == 0 {
			t.Errorf("no step covered %q", k)
		}
	}
}

// popCoverage counts what the histories reached.
type popCoverage struct {
	mu sync.Mutex // the histories run in parallel
	n  map[string]int
}

func (c *popCoverage) add(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[k]++
}

// popSide is one database and how it pops.
type popSide struct {
	name string
	db   *pgwire.DB
	tail *cursors.Tail // the tail sides'
	// claimed: the row's last delivery was recorded by a tail claim (its
	// delivered_hashes are the digest of the entries).
	claimed map[pdRow]bool
}

// pdRow names a cursor row by names, the same on every side.
type pdRow struct{ queue, partition, group string }

// popDiff is one history played on every side.
type popDiff struct {
	ctx     context.Context
	t       *testing.T
	name    string
	rng     *rand.Rand
	cov     *popCoverage
	sides   []*popSide
	queues  map[string]pdQueue
	step    int
	history []string
	pushed  int
	ages    int
	pids    map[string]int64    // queue/partition: the same id on every side
	last    map[string]int64    // queue/partition: its last offset
	stored  map[string][]string // queue/partition: transactionIds pushed and not deleted
	pops    []pdPop             // the pops that delivered, for acknowledgements
	// rows are the reference side's cursor rows after the last step.
	rows map[pdRow]pdCursor
}

// pdPop is a pop that delivered: its lease and what each partition gave.
type pdPop struct {
	queue, group string
	lease        [16]byte
	auto         bool
	parts        map[string][]string // partition: transactionIds delivered
}

func newPopDiff(ctx context.Context, t *testing.T, name string, seed int64, cov *popCoverage) *popDiff {
	r := &popDiff{ctx: ctx, t: t, name: name, rng: rand.New(rand.NewSource(seed)), cov: cov, queues: map[string]pdQueue{},
		pids: map[string]int64{}, last: map[string]int64{}, stored: map[string][]string{}}
	for _, n := range popDiffSides {
		s := &popSide{name: n, db: newDB(t), claimed: map[pdRow]bool{}}
		if strings.HasPrefix(n, "tail") {
			s.tail = cursors.NewTail(1 << 30)
		}
		if n == "tail-arrays" {
			s.db.ArraysOnly()
		}
		r.sides = append(r.sides, s)
	}
	for _, q := range pdQueues() {
		r.queues[q.name] = q
		for _, s := range r.sides {
			if _, err := s.db.ConfigureQueue(ctx, pdTenant, q.name, q.upd); err != nil {
				t.Fatal(err)
			}
			s.tail.Want(pdTenant, q.name)
		}
	}
	return r
}

func (r *popDiff) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("%s, step %d: %s\nthe history so far:\n%s", r.name, r.step, fmt.Sprintf(format, args...), strings.Join(r.history, "\n"))
}

func (r *popDiff) logStep(format string, args ...any) {
	r.step++
	r.history = append(r.history, fmt.Sprintf("%3d  ", r.step)+fmt.Sprintf(format, args...))
}

func (r *popDiff) note(format string, args ...any) {
	r.history[len(r.history)-1] += fmt.Sprintf(format, args...)
}

// random plays a seeded history.
func (r *popDiff) random() {
	r.t.Helper()
	names := make([]string, 0, len(r.queues))
	for _, q := range pdQueues() {
		names = append(names, q.name)
	}
	for _, q := range names {
		r.push(false, q, pdPartitions...)
	}
	for r.step < popDiffSteps {
		q := names[r.rng.Intn(len(names))]
		switch x := r.rng.Intn(100); {
		case x < 14:
			r.push(false, q, r.someParts()...)
		case x < 18:
			r.push(true, q, r.someParts()...)
		case x < 50:
			req := pdPopReq{queue: q, group: pdGroups[r.rng.Intn(len(pdGroups))], parts: r.someParts(), batch: 1 + r.rng.Intn(5),
				auto: r.rng.Intn(5) == 0, byName: r.rng.Intn(5) == 0}
			if r.rng.Intn(25) == 0 {
				req.tenant = pdStranger
			}
			r.pop(req)
		case x < 74:
			r.ackSome()
		case x < 80:
			r.expireSome()
		case x < 87:
			r.deleteSome(q)
		case x < 93:
			r.age()
		default:
			r.retention(1 + r.rng.Intn(3))
		}
	}
}

// someParts picks one or two partitions.
func (r *popDiff) someParts() []string {
	perm := r.rng.Perm(len(pdPartitions))[:1+r.rng.Intn(2)]
	out := make([]string, len(perm))
	for i, k := range perm {
		out[i] = pdPartitions[k]
	}
	return out
}

// ackSome acknowledges what one of the last pops delivered on one of its
// partitions, mostly whole and completed.
func (r *popDiff) ackSome() {
	r.t.Helper()
	if len(r.pops) == 0 {
		return
	}
	p := r.pops[len(r.pops)-1-r.rng.Intn(min(len(r.pops), 3))]
	var parts []string
	for part := range p.parts {
		parts = append(parts, part)
	}
	slices.Sort(parts)
	part := parts[r.rng.Intn(len(parts))]
	txids := p.parts[part]
	status := []string{"completed", "completed", "completed", "retry", "failed"}[r.rng.Intn(5)]
	if r.rng.Intn(4) == 0 {
		txids = txids[:1+r.rng.Intn(len(txids))]
	}
	r.ack(p, part, txids, status, r.rng.Intn(5) == 0)
}

// expireSome ends a lease one of the last pops took, if it still holds.
func (r *popDiff) expireSome() {
	r.t.Helper()
	if len(r.pops) == 0 {
		return
	}
	p := r.pops[len(r.pops)-1-r.rng.Intn(min(len(r.pops), 3))]
	r.expire(p)
}

// deleteSome deletes a message of the queue the script pushed.
func (r *popDiff) deleteSome(queue string) {
	r.t.Helper()
	part := pdPartitions[r.rng.Intn(len(pdPartitions))]
	ids := r.stored[queue+"/"+part]
	if len(ids) == 0 {
		return
	}
	r.delete(queue, part, ids[r.rng.Intn(len(ids))])
}
