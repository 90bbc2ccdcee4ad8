package consume

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

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/readside"
	"github.com/queenbridge/queenbridge/storage"
)

// The differential test of the two acknowledgement paths: two groups of
// one queue (so the same partitions and the same pushes), one consumed by
// a Consumer with the whole-batch fast path and one by a Consumer with
// GeneralAcksOnly, driven by the same seeded script of pushes, pops,
// acknowledgements and lease expiries. After every step the two must agree
// on every answer, cursor row and dead letter: the fast path is an
// optimisation and may change nothing a client or the database can see.

const (
	diffSeeds      = 20
	diffSteps      = 40
	diffPartitions = 4
	diffRetryLimit = 1
)

var diffTenant = tenancy.TenantID{}

func TestWholeBatchAcksAgreeWithTheGeneralPath(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	db, err := pgwire.Open(ctx, pgwire.Config{DSN: testenv.NewDatabase(t), MaxConns: 8, AcquireTimeout: time.Minute, StatementTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// Never started: these pops do not wait, so it parks nothing.
	reads, err := readside.New(readside.Config{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	cov := &diffCoverage{n: map[string]int{}}
	t.Run("seeds", func(t *testing.T) {
		for seed := int64(1); seed <= diffSeeds; seed++ {
			t.Run(fmt.Sprint(seed), func(t *testing.T) {
				t.Parallel()
				newDiffRun(ctx, t, db, reads, seed, cov).run()
			})
		}
	})
	if t.Failed() {
		return
	}
	t.Logf("coverage: %v", cov.n)
	// The script must have reached every case, or the agreement says little.
	for _, k := range []string{
		"kind:whole", "kind:whole-two", "kind:split", "kind:partial", "kind:mixed", "kind:reordered", "kind:unknown",
		"kind:repeat", "kind:doubled", "kind:stale", "kind:old", "kind:nolease", "kind:badstatus", "expire",
		"fast:completed", "fast:failed", "fast:failed-at-limit", "fast:dlq", "fast:retry",
		"acked an expired lease", "pop took over an expired lease", "a delivery without hash entries",
		"delete", "a delivery with a hole",
		"err:lease expired or not held", "err:transactionId is not among the messages delivered after the cursor",
		"err:status must be completed, success, failed, dlq or retry",
	} {
		if cov.n[k] == 0 {
			t.Errorf("no step covered %q", k)
		}
	}
}

// diffCoverage counts what the scripts reached.
type diffCoverage struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *diffCoverage) add(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[k]++
}

// diffSide is one of the two consumers and what it has seen.
type diffSide struct {
	name, group string
	c           *Consumer
	marks       *fakeMarks
	obs         *fakeObserver
	leases      [][16]byte // by pop, in script order
}

// diffRun is one seed's script.
type diffRun struct {
	ctx     context.Context
	t       *testing.T
	db      *pgwire.DB
	rng     *rand.Rand
	seed    int64
	step    int
	history []string
	queue   string
	names   []string
	pids    map[string]int64
	sides   [2]*diffSide // the fast path's, the general path's
	pops    []diffPop
	last    diffAckStep // for a repeat
	pushed  int
	stored  []storedMsg // pushed and not deleted
	// The fast side's cursor rows after the last step, and their leases.
	rows      map[int64]cursorRow
	rowLeases map[int64][16]byte
	cov       *diffCoverage
}

func newDiffRun(ctx context.Context, t *testing.T, db *pgwire.DB, reads *readside.Reads, seed int64, cov *diffCoverage) *diffRun {
	r := &diffRun{ctx: ctx, t: t, db: db, rng: rand.New(rand.NewSource(seed)), seed: seed, queue: fmt.Sprintf("diff.s%d", seed),
		pids: map[string]int64{}, cov: cov}
	for i := 0; i < diffPartitions; i++ {
		r.names = append(r.names, fmt.Sprint("p", i))
	}
	for s, general := range []bool{false, true} {
		side := &diffSide{name: "fast", group: "g-fast", marks: &fakeMarks{}, obs: &fakeObserver{}}
		if general {
			side.name, side.group = "general", "g-slow" // as long as the other: pops cut by bytes alike
		}
		c, err := New(Config{DB: db, Reads: reads, Marks: side.marks, Payloads: plainPayloads{}, Observer: side.obs, GeneralAcksOnly: general})
		if err != nil {
			t.Fatal(err)
		}
		side.c = c
		r.sides[s] = side
	}
	return r
}

func (r *diffRun) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("seed %d, step %d: %s\nthe script so far:\n%s", r.seed, r.step, fmt.Sprintf(format, args...), strings.Join(r.history, "\n"))
}

func (r *diffRun) logStep(format string, args ...any) {
	r.history = append(r.history, fmt.Sprintf("%3d  ", r.step)+fmt.Sprintf(format, args...))
}

func (r *diffRun) run() {
	r.t.Helper()
	if _, err := r.db.ConfigureQueue(r.ctx, diffTenant, r.queue, storage.QueueUpdate{
		Other: map[string]json.RawMessage{
			"retryLimit": json.RawMessage(fmt.Sprint(diffRetryLimit)),
			"leaseTime":  json.RawMessage("3600"), // leases expire only when the script says so
		}}); err != nil {
		r.fatalf("configure: %v", err)
	}
	r.push([]int{0, 1, 2, 3})
	r.push([]int{0, 1, 2, 3})
	r.compare()
	for r.step = 1; r.step <= diffSteps; r.step++ {
		switch x := r.rng.Intn(100); {
		case x < 8:
			r.push(r.rng.Perm(diffPartitions)[:1+r.rng.Intn(3)])
		case x < 11:
			r.tombstone()
		case x < 38:
			r.pop()
		case x < 92:
			r.ack()
		default:
			r.expire()
		}
		r.compare()
	}
	fast, general := r.sides[0].c.Stats(), r.sides[1].c.Stats()
	if fast.WholeAcks == 0 || general.WholeAcks != 0 {
		r.fatalf("whole-batch acknowledgements: %d on the fast side (want some), %d with GeneralAcksOnly (want none)", fast.WholeAcks, general.WholeAcks)
	}
}

// play sends an acknowledgement step to both sides and checks that they
// answered alike and told the marks and the metrics alike, and that the
// fast side took the fast path exactly where it should have.
func (r *diffRun) play(st diffAckStep) {
	r.t.Helper()
	expect := 0
	for _, refs := range st.reqs {
		expect += r.expectWhole(refs)
	}
	r.cov.add("kind:" + st.kind)
	r.logStep("ack %s (concurrent %v): %s", st.kind, st.concurrent, describeRefs(st.reqs))
	var answers [2][][]AckOutcome
	var released, observed [2][]string
	var whole [2]uint64
	for s, side := range r.sides {
		side.marks.mu.Lock()
		side.marks.released = nil
		side.marks.mu.Unlock()
		side.obs.mu.Lock()
		side.obs.acked = nil
		side.obs.mu.Unlock()
		before := side.c.Stats().WholeAcks
		answers[s] = side.send(r, st)
		whole[s] = side.c.Stats().WholeAcks - before
		side.marks.mu.Lock()
		for _, rel := range side.marks.released {
			released[s] = append(released[s], fmt.Sprintf("%s/%s again %v", rel.queue, rel.partition, rel.again))
		}
		side.marks.mu.Unlock()
		side.obs.mu.Lock()
		for _, a := range side.obs.acked {
			observed[s] = append(observed[s], fmt.Sprintf("%q ok %v dead %v", a.status, a.ok, a.dead))
		}
		side.obs.mu.Unlock()
		slices.Sort(released[s]) // the fast path tells of its groups first
		slices.Sort(observed[s])
	}
	var got []string
	for i, refs := range st.reqs {
		for k := range refs {
			f, g := answers[0][i][k], answers[1][i][k]
			if f != g {
				r.fatalf("request %d, ack %d (%+v) answered differently:\nfast    %+v\ngeneral %+v", i, k, refs[k], f, g)
			}
			if f.Err != "" {
				r.cov.add("err:" + f.Err)
			}
			got = append(got, fmt.Sprintf("%s:%q released %v dead %v", f.TransactionID, f.Err, f.LeaseReleased, f.DeadLettered))
		}
	}
	r.history[len(r.history)-1] += fmt.Sprintf(" -> %d whole; %s", whole[0], strings.Join(got, ", "))
	if !slices.Equal(released[0], released[1]) {
		r.fatalf("releases told differ:\nfast    %q\ngeneral %q", released[0], released[1])
	}
	if !slices.Equal(observed[0], observed[1]) {
		r.fatalf("acks observed differ:\nfast    %q\ngeneral %q", observed[0], observed[1])
	}
	if whole[0] != uint64(expect) || whole[1] != 0 {
		r.fatalf("%d whole-batch acknowledgements applied on the fast side, want %d; %d with GeneralAcksOnly", whole[0], expect, whole[1])
	}
}

// expectWhole counts the groups of a request that the fast path should
// apply, judging by the fast side's cursor rows before the step: all that
// its lease delivered, in order, one status, the lease live and nothing of
// it acknowledged yet, and hash entries recorded (none after a cut answer).
func (r *diffRun) expectWhole(refs []ackRef) int {
	type key struct {
		pid int64
		pop int
	}
	var order []key
	groups := map[key][]ackRef{}
	for _, a := range refs {
		k := key{a.pid, a.pop}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], a)
	}
	norm := func(s AckStatus) AckStatus {
		if s == "" || s == Success {
			return Completed
		}
		return s
	}
	n := 0
	for _, k := range order {
		g := groups[k]
		row, ok := r.rows[k.pid]
		if k.pop < 0 || !ok || !row.held || r.rowLeases[k.pid] != r.sides[0].leases[k.pop] {
			continue
		}
		if !row.live {
			r.cov.add("acked an expired lease")
			continue
		}
		part := r.pops[k.pop].part(k.pid)
		if part == nil || row.acked != 0 || row.digest == "" || len(g) != len(part.txids) {
			continue
		}
		st := norm(g[0].status)
		same := slices.Contains([]AckStatus{Completed, Failed, DeadLetter, Retry}, st)
		for i, a := range g {
			same = same && norm(a.status) == st && a.tx == part.txids[i]
		}
		if !same {
			continue
		}
		n++
		label := "fast:" + string(st)
		if st == Failed && row.retries >= diffRetryLimit {
			label += "-at-limit"
		}
		r.cov.add(label)
	}
	return n
}

func describeRefs(reqs [][]ackRef) string {
	var out []string
	for _, refs := range reqs {
		var items []string
		for _, a := range refs {
			items = append(items, fmt.Sprintf("%s@%d/#%d:%q", a.tx, a.pid, a.pop, a.status))
		}
		out = append(out, "["+strings.Join(items, " ")+"]")
	}
	return strings.Join(out, " ")
}
