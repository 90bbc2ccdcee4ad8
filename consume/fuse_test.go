package consume

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
)

// gatedWhole answers whole-batch statements as the database would when
// every acknowledgement matches (dlq dead-letters), and holds a statement
// whose first acknowledgement's partition has a gate until the gate is
// closed: a statement in flight for as long as the test wants.
type gatedWhole struct {
	// mu guards gates: the test adds them while the fuser's statements,
	// two at once, look theirs up.
	mu      sync.Mutex
	gates   map[int64]chan struct{}
	started chan int64 // the first partition id of each statement, as it starts
}

func newGatedWhole() *gatedWhole {
	return &gatedWhole{gates: map[int64]chan struct{}{}, started: make(chan int64, 64)}
}

func (g *gatedWhole) gate(pid int64) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := make(chan struct{})
	g.gates[pid] = c
	return c
}

func (g *gatedWhole) run(acks []pgwire.WholeAck) ([]pgwire.WholeAckResult, error) {
	g.started <- acks[0].PID
	g.mu.Lock()
	gate := g.gates[acks[0].PID]
	g.mu.Unlock()
	if gate != nil {
		<-gate
	}
	out := make([]pgwire.WholeAckResult, len(acks))
	for i, a := range acks {
		out[i] = pgwire.WholeAckResult{Applied: true, DeadLettered: a.Status == "dlq", Queue: "q", Partition: fmt.Sprint("p", a.PID)}
	}
	return out, nil
}

// wholeBatch is the whole-batch acknowledgement of n messages of partition
// pid under lease l.
func wholeBatch(pid int64, l *[16]byte, status AckStatus, n int) []Ack {
	out := make([]Ack, n)
	for i := range out {
		out[i] = Ack{TransactionID: fmt.Sprintf("p%d-%d", pid, i), PartitionID: pid, Group: "g", Lease: l, Status: status}
	}
	return out
}

// statementOf lists a recorded statement's acknowledgements: "pid:status:n".
func statementOf(acks []pgwire.WholeAck) []string {
	var out []string
	for _, a := range acks {
		out = append(out, fmt.Sprintf("%d:%s:%d", a.PID, a.Status, len(a.TransactionIDs)))
	}
	return out
}

func (r *rig) statements() [][]string {
	r.store.mu.Lock()
	defer r.store.mu.Unlock()
	var out [][]string
	for _, w := range r.store.wholes {
		out = append(out, statementOf(w))
	}
	return out
}

func (r *rig) queued() int {
	r.c.acks.mu.Lock()
	defer r.c.acks.mu.Unlock()
	return len(r.c.acks.queue)
}

// checkWholeAnswers checks that every ack of a request was answered as
// applied by a whole-batch statement of its own partition.
func checkWholeAnswers(t *testing.T, acks []Ack, out []AckOutcome) {
	t.Helper()
	if len(out) != len(acks) {
		t.Fatalf("%d answers for %d acks", len(out), len(acks))
	}
	for i, o := range out {
		want := AckOutcome{TransactionID: acks[i].TransactionID, Queue: "q", Partition: fmt.Sprint("p", acks[i].PartitionID),
			LeaseReleased: true, DeadLettered: acks[i].Status == DeadLetter}
		if o != want {
			t.Errorf("answer %d: %+v, want %+v", i, o, want)
		}
	}
}

// While every statement slot is taken, the whole-batch acknowledgements of
// requests arriving meanwhile wait and go together in one statement, in
// arrival order, when a slot frees; each request gets its own answers.
func TestAckFuserSendsWhatArrivedMeanwhileInOneStatement(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	g := newGatedWhole()
	r.store.whole = g.run
	ctx := context.Background()
	type request struct {
		acks []Ack
		out  chan []AckOutcome
	}
	send := func(acks []Ack) request {
		q := request{acks: acks, out: make(chan []AckOutcome, 1)}
		go func() { q.out <- r.c.Ack(ctx, tenant, acks) }()
		return q
	}
	// Requests that take every slot, each held in its statement.
	var blockers []request
	var gates []chan struct{}
	for k := 0; k < maxAckStatements; k++ {
		pid := int64(100 + k)
		gates = append(gates, g.gate(pid))
		blockers = append(blockers, send(wholeBatch(pid, leaseOf(1), Completed, 2)))
		if got := <-g.started; got != pid {
			t.Fatalf("statement %d started with partition %d, want %d", k, got, pid)
		}
	}
	// Three requests arrive while no slot is free: they queue, one by one.
	waiting := []request{
		send(wholeBatch(1, leaseOf(2), Completed, 3)),
	}
	testkit.WaitFor(t, "the first request to queue", time.Minute, func() bool { return r.queued() == 1 })
	waiting = append(waiting, send(append(wholeBatch(2, leaseOf(2), DeadLetter, 1), wholeBatch(3, leaseOf(2), Retry, 2)...)))
	testkit.WaitFor(t, "the second request to queue", time.Minute, func() bool { return r.queued() == 2 })
	waiting = append(waiting, send(wholeBatch(4, leaseOf(3), Failed, 1)))
	testkit.WaitFor(t, "the third request to queue", time.Minute, func() bool { return r.queued() == 3 })
	select {
	case pid := <-g.started:
		t.Fatalf("a statement (partition %d) started while every slot was taken", pid)
	default:
	}
	close(gates[0])
	if got := <-g.started; got != 1 {
		t.Fatalf("the next statement started with partition %d, want 1", got)
	}
	checkWholeAnswers(t, blockers[0].acks, <-blockers[0].out)
	for _, q := range waiting {
		checkWholeAnswers(t, q.acks, <-q.out)
	}
	for k := 1; k < len(gates); k++ {
		close(gates[k])
		checkWholeAnswers(t, blockers[k].acks, <-blockers[k].out)
	}
	var want [][]string
	for k := 0; k < maxAckStatements; k++ {
		want = append(want, []string{fmt.Sprintf("%d:completed:2", 100+k)})
	}
	want = append(want, []string{"1:completed:3", "2:dlq:1", "3:retry:2", "4:failed:1"})
	if got := r.statements(); !slices.EqualFunc(got, want, slices.Equal[[]string]) {
		t.Errorf("statements\n%q\nwant\n%q", got, want)
	}
	if calls := r.store.ackCalls(); len(calls) != 0 {
		t.Errorf("applied whole batches went through the general path too: %+v", calls)
	}
	if n := r.c.Stats().WholeAcks; n != uint64(maxAckStatements+4) {
		t.Errorf("%d whole-batch acknowledgements counted, want %d", n, maxAckStatements+4)
	}
	r.c.acks.mu.Lock()
	queued, inflight := len(r.c.acks.queue), r.c.acks.inflight
	r.c.acks.mu.Unlock()
	if queued != 0 || inflight != 0 {
		t.Errorf("the fuser did not come to rest: %d queued, %d in flight", queued, inflight)
	}
}

// A request that finds a statement slot free is sent at once, alone, even
// while another statement is in flight.
func TestAckFuserSendsALoneAckAtOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	g := newGatedWhole()
	r.store.whole = g.run
	ctx := context.Background()
	gate := g.gate(100)
	held := make(chan []AckOutcome, 1)
	heldAcks := wholeBatch(100, leaseOf(1), Completed, 1)
	go func() { held <- r.c.Ack(ctx, tenant, heldAcks) }()
	<-g.started
	lone := wholeBatch(7, leaseOf(2), DeadLetter, 2)
	checkWholeAnswers(t, lone, r.c.Ack(ctx, tenant, lone)) // returns while the other statement is held
	close(gate)
	checkWholeAnswers(t, heldAcks, <-held)
	want := [][]string{{"100:completed:1"}, {"7:dlq:2"}}
	if got := r.statements(); !slices.EqualFunc(got, want, slices.Equal[[]string]) {
		t.Errorf("statements %q, want %q", got, want)
	}
}

// Only the groups that may be whole batches reach the fuser, one whole ack
// each; the database's refusals and everything else go through
// consumer_ack_v1, and answers come back in request order.
func TestAckSendsWholeBatchesToTheFuserAndTheRestToTheGeneralPath(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.store.whole = func(acks []pgwire.WholeAck) ([]pgwire.WholeAckResult, error) {
		out := make([]pgwire.WholeAckResult, len(acks))
		for i, a := range acks {
			out[i] = pgwire.WholeAckResult{Applied: a.PID != 30, Queue: "q", Partition: fmt.Sprint("p", a.PID)}
		}
		return out, nil
	}
	acks := []Ack{
		{TransactionID: "a1", PartitionID: 20, Group: "g", Lease: leaseOf(1), Status: Success, Error: "e1"},
		{TransactionID: "b1", PartitionID: 10, Group: "g", Lease: leaseOf(1), Status: Failed},
		{TransactionID: "a2", PartitionID: 20, Group: "g", Lease: leaseOf(1), Status: ""},
		{TransactionID: "c1", PartitionID: 10, Group: "g", Lease: leaseOf(1), Status: Completed}, // mixed with b1
		{TransactionID: "d1", PartitionID: 30, Group: "g", Lease: leaseOf(1), Status: Retry},     // refused by the database
		{TransactionID: "e1", PartitionID: 40, Group: "g", Lease: nil, Status: Completed},        // no lease
	}
	out := r.c.Ack(context.Background(), tenant, acks)
	r.store.mu.Lock()
	wholes := r.store.wholes
	r.store.mu.Unlock()
	if len(wholes) != 1 || len(wholes[0]) != 2 {
		t.Fatalf("whole-batch statements %+v, want one of partitions 20 and 30", wholes)
	}
	w := wholes[0][0]
	if w.PID != 20 || w.Status != "completed" || w.Group != "g" || w.Lease != *leaseOf(1) || w.Tenant != tenant ||
		!slices.Equal(w.TransactionIDs, []string{"a1", "a2"}) || !slices.Equal(w.Errors, []string{"e1", ""}) {
		t.Errorf("whole ack of partition 20: %+v", w)
	}
	if w := wholes[0][1]; w.PID != 30 || w.Status != "retry" {
		t.Errorf("whole ack of partition 30: %+v", w)
	}
	var calls []string
	for _, c := range r.store.ackCalls() {
		calls = append(calls, fmt.Sprintf("%d %s %d", c.pid, leaseName(c.lease), len(c.items)))
	}
	if want := []string{"10 1 2", "30 1 1", "40 - 1"}; !slices.Equal(calls, want) {
		t.Errorf("general calls %q, want %q", calls, want)
	}
	for i, o := range out {
		if o.TransactionID != acks[i].TransactionID || o.Err != "" || o.Partition != fmt.Sprint("p", acks[i].PartitionID) {
			t.Errorf("answer %d: %+v", i, o)
		}
		if whole := acks[i].PartitionID == 20; o.LeaseReleased != whole {
			t.Errorf("answer %d: lease released %v (only the applied whole batch releases here)", i, o.LeaseReleased)
		}
	}
	if n := r.c.Stats().WholeAcks; n != 1 {
		t.Errorf("%d whole-batch acknowledgements counted, want 1", n)
	}
}

// A whole-batch statement that fails sends its groups through the general
// path, which answers each item; GeneralAcksOnly never asks the fuser.
func TestAckWithoutTheFastPath(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.store.whole = func([]pgwire.WholeAck) ([]pgwire.WholeAckResult, error) {
		return nil, errors.New("connection reset")
	}
	acks := wholeBatch(5, leaseOf(1), Completed, 3)
	for i, o := range r.c.Ack(context.Background(), tenant, acks) {
		if o.Err != "" || o.TransactionID != acks[i].TransactionID {
			t.Errorf("answer %d after a failed statement: %+v", i, o)
		}
	}
	if calls := r.store.ackCalls(); len(calls) != 1 || calls[0].pid != 5 || len(calls[0].items) != 3 {
		t.Errorf("general calls after a failed statement: %+v", calls)
	}

	g := newRig(t)
	g.c.cfg.GeneralAcksOnly = true
	g.c.Ack(context.Background(), tenant, acks)
	if n := len(g.statements()); n != 0 {
		t.Errorf("GeneralAcksOnly sent %d whole-batch statements", n)
	}
	if calls := g.store.ackCalls(); len(calls) != 1 {
		t.Errorf("GeneralAcksOnly: general calls %+v", calls)
	}
}

// wholeStatus: one status for the whole group (success and "" are
// completed), distinct transactionIds, a lease, a known status.
func TestWholeStatus(t *testing.T) {
	t.Parallel()
	l := leaseOf(1)
	a := func(tx string, st AckStatus) Ack {
		return Ack{TransactionID: tx, PartitionID: 1, Group: "g", Lease: l, Status: st}
	}
	many := make([]Ack, maxWholeAck+1)
	for i := range many {
		many[i] = a(fmt.Sprint("m", i), Completed)
	}
	cases := []struct {
		name string
		acks []Ack
		want AckStatus
	}{
		{"completed", []Ack{a("x", Completed), a("y", Completed)}, Completed},
		{"success and empty are completed", []Ack{a("x", Success), a("y", ""), a("z", Completed)}, Completed},
		{"empty alone", []Ack{a("x", "")}, Completed},
		{"failed", []Ack{a("x", Failed), a("y", Failed)}, Failed},
		{"dlq", []Ack{a("x", DeadLetter)}, DeadLetter},
		{"retry", []Ack{a("x", Retry), a("y", Retry)}, Retry},
		{"mixed", []Ack{a("x", Completed), a("y", Failed)}, ""},
		{"mixed after success", []Ack{a("x", Success), a("y", Retry)}, ""},
		{"duplicate", []Ack{a("x", Completed), a("y", Completed), a("x", Completed)}, ""},
		{"unknown status", []Ack{a("x", "bogus"), a("y", "bogus")}, ""},
		{"unknown status after a known one", []Ack{a("x", Failed), a("y", "FAILED")}, ""},
		{"no lease", []Ack{{TransactionID: "x", PartitionID: 1, Group: "g", Status: Completed}}, ""},
		{"too many", many, ""},
		{"at the bound", many[:maxWholeAck], Completed},
	}
	for _, c := range cases {
		groups := groupAcks(c.acks)
		if len(groups) != 1 {
			t.Fatalf("%s: %d groups", c.name, len(groups))
		}
		if got := wholeStatus(c.acks, groups[0]); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if got := wholeStatus(nil, ackGroup{lease: l}); got != "" {
		t.Errorf("an empty group: %q", got)
	}
}

// A queued request whose caller gave up before its statement is answered
// with its context's error and none of it is sent; the rest of its batch
// is, even when the request that gave up is the one that runs the batch.
func TestFuserLeavesOutACallerThatGaveUp(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	started := make(chan []int, 8)
	f := &fuser[int, int]{slots: 1, run: func(_ context.Context, in []int) ([]int, error) {
		started <- in
		if in[0] == 0 {
			<-gate
		}
		out := make([]int, len(in))
		for i, v := range in {
			out[i] = v * 10
		}
		return out, nil
	}}
	type answer struct {
		out []int
		err error
	}
	do := func(ctx context.Context, in ...int) chan answer {
		c := make(chan answer, 1)
		go func() {
			out, err := f.do(ctx, in)
			c <- answer{out, err}
		}()
		return c
	}
	queued := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.queue)
	}
	held := do(context.Background(), 0)
	<-started // it holds the only statement slot
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := do(ctx, 1, 2)
	testkit.WaitFor(t, "the first request to queue", time.Minute, func() bool { return queued() == 1 })
	kept := do(context.Background(), 3)
	testkit.WaitFor(t, "the second request to queue", time.Minute, func() bool { return queued() == 2 })
	cancel()
	close(gate)
	if a := <-held; a.err != nil || !slices.Equal(a.out, []int{0}) {
		t.Fatalf("the held request: %+v", a)
	}
	if got := <-started; !slices.Equal(got, []int{3}) {
		t.Fatalf("the next statement sent %v, want only the request that did not give up", got)
	}
	if a := <-gaveUp; !errors.Is(a.err, context.Canceled) || a.out != nil {
		t.Fatalf("the request that gave up: %+v", a)
	}
	if a := <-kept; a.err != nil || !slices.Equal(a.out, []int{30}) {
		t.Fatalf("the request that waited: %+v", a)
	}
	select {
	case in := <-started:
		t.Fatalf("another statement sent %v", in)
	default:
	}
}
