package cursors

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
)

// names lists the partitions a group's any-partition pop would try now,
// starting at start.
func names(t testing.TB, m *Marks, tenant [16]byte, queue, group string, start uint64) []string {
	t.Helper()
	cs, err := m.candidates(context.Background(), tenant, queue, group, start)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

// candidate returns the group's candidate for partition, failing when it
// is not one.
func candidateOf(t testing.TB, m *Marks, queue, group, partition string) Candidate {
	t.Helper()
	cs, err := m.candidates(context.Background(), [16]byte{}, queue, group, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Name == partition {
			return c
		}
	}
	t.Fatalf("%s is not a candidate of %s for %s", partition, queue, group)
	return Candidate{}
}

// popAs pops what marks offered, as the read side's pop does: by id when
// known, else by name.
func popAs(t testing.TB, db *pgwire.DB, queue, group string, c Candidate, lease [16]byte) pgwire.PopResult {
	t.Helper()
	req := pgwire.PopRequest{Queue: queue, Group: group, Lease: lease, Batch: 100}
	if c.ID > 0 {
		req.PartitionID = c.ID
	} else {
		req.Partition = c.Name
	}
	res, err := db.Pop(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The first any-partition pop of a queue and group reads the partitions
// with messages past the group's cursors from the database, once; after
// that the list is kept from announcements, and every group has its own.
func TestCandidatesFirstReadFromTheDatabase(t *testing.T) {
	t.Parallel()
	db, m := newMarks(t)
	ctx := context.Background()
	push(t, db, "q", "p1", "a", "b")
	push(t, db, "q", "p2", "c")
	push(t, db, "q", "p3", "d")
	push(t, db, "other", "p4", "e")
	// g has taken everything of p3.
	if r, err := db.Pop(ctx, pgwire.PopRequest{Queue: "q", Partition: "p3", Group: "g", AutoAck: true, Batch: 10}); err != nil || r.Status != pgwire.PopDelivered {
		t.Fatalf("auto-ack pop of p3: %+v %v", r, err)
	}
	cs, err := m.candidates(ctx, [16]byte{}, "q", "g", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].Name != "p1" || cs[1].Name != "p2" || cs[0].ID == 0 || cs[1].ID == 0 || cs[0].ID == cs[1].ID {
		t.Fatalf("first candidates of q for g: %+v", cs)
	}

	// A push nobody announced does not reach the list: it is not read again.
	push(t, db, "q", "p3", "f")
	if got := names(t, m, [16]byte{}, "q", "g", 0); !slices.Equal(got, []string{"p1", "p2"}) {
		t.Fatalf("after an unannounced push: %v", got)
	}
	m.Heard([16]byte{}, "q", "p3", true)
	if got := names(t, m, [16]byte{}, "q", "g", 0); !slices.Equal(got, []string{"p1", "p2", "p3"}) {
		t.Fatalf("after the push to p3 is announced: %v", got)
	}
	// Known by name only until a pop learns its id.
	c := candidateOf(t, m, "q", "g", "p3")
	if c.ID != 0 {
		t.Fatalf("p3 has id %d before any pop here", c.ID)
	}
	res := popAs(t, db, "q", "g", c, uuid.New())
	if res.Status != pgwire.PopDelivered || fmt.Sprint(txids(res.Messages)) != "[f]" {
		t.Fatalf("pop of p3 by name: %+v", res)
	}
	m.Outcome([16]byte{}, "q", "g", c, res)
	if c.p.id != res.PartitionID {
		t.Fatalf("p3's id after a pop: %d, want %d", c.p.id, res.PartitionID)
	}

	// Another group reads the database for itself: p3 has messages past
	// its cursor too.
	if got := names(t, m, [16]byte{}, "q", "g2", 0); !slices.Equal(got, []string{"p1", "p2", "p3"}) {
		t.Fatalf("g2's first candidates: %v", got)
	}
	// A group that consumed p1 already: the partitions the bridge knows of
	// and the database does not list for it count as drained for it.
	if r, err := db.Pop(ctx, pgwire.PopRequest{Queue: "q", Partition: "p1", Group: "g3", AutoAck: true, Batch: 10}); err != nil || r.Status != pgwire.PopDelivered {
		t.Fatalf("auto-ack pop of p1: %+v %v", r, err)
	}
	if got := names(t, m, [16]byte{}, "q", "g3", 0); !slices.Equal(got, []string{"p2", "p3"}) {
		t.Fatalf("g3's first candidates: %v", got)
	}
	m.Heard([16]byte{}, "q", "p1", true)
	if got := names(t, m, [16]byte{}, "q", "g3", 0); !slices.Equal(got, []string{"p1", "p2", "p3"}) {
		t.Fatalf("g3 after p1 is announced: %v", got)
	}

	// Queues and tenants are apart.
	if got := names(t, m, [16]byte{}, "other", "g", 0); !slices.Equal(got, []string{"p4"}) {
		t.Fatalf("other queue: %v", got)
	}
	if got := names(t, m, uuid.New(), "q", "g", 0); len(got) != 0 {
		t.Fatalf("another tenant's q: %v", got)
	}
}

// Candidates start at a rotating position, so consumers spread over the
// partitions, and always list every candidate once.
func TestCandidatesRotate(t *testing.T) {
	t.Parallel()
	db, m := newMarks(t)
	for _, p := range []string{"p1", "p2", "p3"} {
		push(t, db, "q", p, "m-"+p)
	}
	for start, want := range map[uint64][]string{0: {"p1", "p2", "p3"}, 1: {"p2", "p3", "p1"}, 5: {"p3", "p1", "p2"}, 7919: {"p3", "p1", "p2"}} {
		if got := names(t, m, [16]byte{}, "q", "g", start); !slices.Equal(got, want) {
			t.Errorf("start %d: %v, want %v", start, got, want)
		}
	}
}

// What a pop of a candidate found decides whether it stays one: a
// partition found empty is dropped until it is announced again (also when
// the announcement lands while the pop runs); one delivered under a lease
// taken here is held back until the lease is released or the hint passes;
// one leased elsewhere, or empty only because its messages are too young,
// stays; a partition that does not exist is dropped.
func TestOutcomeAfterAPop(t *testing.T) {
	t.Parallel()
	db, m := newMarks(t)
	ctx := context.Background()
	push(t, db, "q", "p", "a", "b")

	// Delivered: a lease taken here holds the partition back.
	c := candidateOf(t, m, "q", "g", "p")
	lease := uuid.New()
	res := popAs(t, db, "q", "g", c, lease)
	if res.Status != pgwire.PopDelivered || fmt.Sprint(txids(res.Messages)) != "[a b]" {
		t.Fatalf("pop: %+v", res)
	}
	m.Outcome([16]byte{}, "q", "g", c, res)
	if got := names(t, m, [16]byte{}, "q", "g", 0); len(got) != 0 {
		t.Fatalf("leased here, still a candidate: %v", got)
	}
	// Released by its ack: a candidate again (the marks do not know yet
	// that it is drained).
	ack, err := db.Ack(ctx, [16]byte{}, res.PartitionID, "g", (*[16]byte)(&lease), []pgwire.AckItem{{TransactionID: "a"}, {TransactionID: "b"}})
	if err != nil || !ack.Released {
		t.Fatalf("ack: %+v %v", ack, err)
	}
	m.Released([16]byte{}, "q", "p", "g", false)

	// Empty: dropped until announced.
	c = candidateOf(t, m, "q", "g", "p")
	res = popAs(t, db, "q", "g", c, uuid.New())
	if res.Status != pgwire.PopEmpty {
		t.Fatalf("pop of a drained partition: %+v", res)
	}
	m.Outcome([16]byte{}, "q", "g", c, res)
	if got := names(t, m, [16]byte{}, "q", "g", 0); len(got) != 0 {
		t.Fatalf("found empty, still a candidate: %v", got)
	}
	// A release without a hand-back leaves it drained; one that hands
	// messages back (failed, retry) makes it a candidate.
	m.Released([16]byte{}, "q", "p", "g", false)
	if got := names(t, m, [16]byte{}, "q", "g", 0); len(got) != 0 {
		t.Fatalf("released, nothing handed back: %v", got)
	}
	m.Released([16]byte{}, "q", "p", "g", true)
	if got := names(t, m, [16]byte{}, "q", "g", 0); !slices.Equal(got, []string{"p"}) {
		t.Fatalf("released with messages handed back: %v", got)
	}

	// An announcement that lands while a pop finds the partition empty
	// keeps it a candidate: the pop looked before the push it announces.
	c = candidateOf(t, m, "q", "g", "p")
	res = popAs(t, db, "q", "g", c, uuid.New())
	m.Heard([16]byte{}, "q", "p", true)
	m.Outcome([16]byte{}, "q", "g", c, res)
	if res.Status != pgwire.PopEmpty {
		t.Fatalf("pop: %+v", res)
	}
	if got := names(t, m, [16]byte{}, "q", "g", 0); !slices.Equal(got, []string{"p"}) {
		t.Fatalf("announced during an empty pop: %v", got)
	}

	// Leased elsewhere (another bridge's consumer): the database refuses
	// the claim, and the partition stays a candidate here.
	push(t, db, "q", "p", "c")
	if r, err := db.Pop(ctx, pgwire.PopRequest{Queue: "q", Partition: "p", Group: "g", Lease: uuid.New(), Batch: 1}); err != nil || r.Status != pgwire.PopDelivered {
		t.Fatalf("pop elsewhere: %+v %v", r, err)
	}
	c = candidateOf(t, m, "q", "g", "p")
	res = popAs(t, db, "q", "g", c, uuid.New())
	if res.Status != pgwire.PopLeased {
		t.Fatalf("pop of a partition leased elsewhere: %+v", res)
	}
	m.Outcome([16]byte{}, "q", "g", c, res)
	if got := names(t, m, [16]byte{}, "q", "g", 0); !slices.Equal(got, []string{"p"}) {
		t.Fatalf("leased elsewhere: %v", got)
	}

	// A partition announced (by a peer, say) that does not exist here.
	m.Heard([16]byte{}, "q", "ghost", true)
	c = candidateOf(t, m, "q", "g", "ghost")
	if c.ID != 0 {
		t.Fatalf("ghost has id %d", c.ID)
	}
	res = popAs(t, db, "q", "g", c, uuid.New())
	if res.Status != pgwire.PopMissing {
		t.Fatalf("pop of a partition that does not exist: %+v", res)
	}
	m.Outcome([16]byte{}, "q", "g", c, res)
	if got := names(t, m, [16]byte{}, "q", "g", 0); slices.Contains(got, "ghost") {
		t.Fatalf("a missing partition stays a candidate: %v", got)
	}
}

// Messages too young to deliver (delayedProcessing) come due without an
// announcement: a pop that finds only them leaves the partition a
// candidate.
func TestOutcomeKeepsADelayedPartition(t *testing.T) {
	t.Parallel()
	db, m := newMarks(t)
	push(t, db, "d", "p", "a")
	setOption(t, db, "d", "delayedProcessing", 60)
	c := candidateOf(t, m, "d", "g", "p")
	res := popAs(t, db, "d", "g", c, uuid.New())
	if res.Status != pgwire.PopEmpty || res.Last <= res.Cursor {
		t.Fatalf("pop of a delayed message: %+v", res)
	}
	m.Outcome([16]byte{}, "d", "g", c, res)
	if got := names(t, m, [16]byte{}, "d", "g", 0); !slices.Equal(got, []string{"p"}) {
		t.Fatalf("a partition with delayed messages: %v", got)
	}
}

// The lease hint is a hint: it ends by itself within leaseHint, even when
// no release is heard of (the ack went to another bridge).
func TestLeaseHintPasses(t *testing.T) {
	t.Parallel()
	db, m := newMarks(t)
	push(t, db, "q", "p", "a")
	c := candidateOf(t, m, "q", "g", "p")
	res := popAs(t, db, "q", "g", c, uuid.New())
	if res.Status != pgwire.PopDelivered || res.LeaseExpires.Before(time.Now().Add(leaseHint)) {
		t.Fatalf("pop: %+v", res)
	}
	m.Outcome([16]byte{}, "q", "g", c, res)
	if got := names(t, m, [16]byte{}, "q", "g", 0); len(got) != 0 {
		t.Fatalf("leased here: %v", got)
	}
	testkit.WaitFor(t, "the lease hint to pass", 30*time.Second, func() bool {
		return slices.Equal(names(t, m, [16]byte{}, "q", "g", 0), []string{"p"})
	})
}

// A claim in progress here holds its partition back from the group's other
// pops until its outcome: delivered turns it into the lease hint, anything
// else frees it.
func TestReserveHoldsAPartitionUntilTheClaimsOutcome(t *testing.T) {
	t.Parallel()
	db, m := newMarks(t)
	push(t, db, "q", "p", "a")
	push(t, db, "q", "r", "b")
	c := candidateOf(t, m, "q", "g", "p")
	if !m.Reserve([16]byte{}, "q", "g", c) {
		t.Fatal("the first reservation was refused")
	}
	if m.Reserve([16]byte{}, "q", "g", c) {
		t.Fatal("a second pop reserved a partition being claimed")
	}
	if got := names(t, m, [16]byte{}, "q", "g", 0); !slices.Equal(got, []string{"r"}) {
		t.Fatalf("candidates while p is claimed: %v", got)
	}
	if got := names(t, m, [16]byte{}, "q", "other", 0); len(got) != 2 {
		t.Fatalf("another group's candidates: %v", got)
	}

	// The claim failed (a zero result): free again.
	m.Outcome([16]byte{}, "q", "g", c, pgwire.PopResult{})
	if !m.Reserve([16]byte{}, "q", "g", c) {
		t.Fatal("a freed partition could not be reserved")
	}
	// Leased elsewhere: free again, as before reservations.
	res := pgwire.PopResult{Status: pgwire.PopLeased}
	m.Outcome([16]byte{}, "q", "g", c, res)
	if got := names(t, m, [16]byte{}, "q", "g", 0); len(got) != 2 {
		t.Fatalf("after a refused claim: %v", got)
	}

	// Delivered with auto-ack: no lease holds the partition, free again.
	if !m.Reserve([16]byte{}, "q", "g", c) {
		t.Fatal("reserve")
	}
	m.Outcome([16]byte{}, "q", "g", c, pgwire.PopResult{Status: pgwire.PopDelivered, PartitionID: c.ID})
	if got := names(t, m, [16]byte{}, "q", "g", 0); len(got) != 2 {
		t.Fatalf("after an auto-ack delivery: %v", got)
	}

	// Delivered: the reservation becomes the lease hint.
	if !m.Reserve([16]byte{}, "q", "g", c) {
		t.Fatal("reserve")
	}
	res = popAs(t, db, "q", "g", c, uuid.New())
	m.Outcome([16]byte{}, "q", "g", c, res)
	if res.Status != pgwire.PopDelivered || m.Reserve([16]byte{}, "q", "g", c) {
		t.Fatalf("delivered (%+v), and reserved again", res)
	}
}

// A deleted queue's marks are forgotten, so its partitions' old ids are not
// claimed again; the same name under another tenant keeps its own, and an
// announcement of the dropped queue marks nothing.
func TestDropForgetsTheQueue(t *testing.T) {
	t.Parallel()
	db, m := newMarks(t)
	push(t, db, "gone", "p", "a")
	other := [16]byte{7}
	for _, tenant := range [][16]byte{{}, other} {
		if _, err := m.candidates(context.Background(), tenant, "gone", "g", 0); err != nil {
			t.Fatal(err)
		}
	}
	if !m.Listening() || m.n.Load() != 2 {
		t.Fatalf("%d queues marked, want both tenants'", m.n.Load())
	}
	m.Drop(other, "gone")
	if m.n.Load() != 1 || m.queues[queueRef{other, "gone"}] != nil || m.queues[queueRef{queue: "gone"}] == nil {
		t.Fatalf("after dropping the other tenant's queue: %d marked", m.n.Load())
	}
	m.Drop([16]byte{}, "gone")
	m.Heard([16]byte{}, "gone", "p", true)
	if m.Listening() || m.n.Load() != 0 || len(m.queues) != 0 {
		t.Fatal("a dropped queue's marks are kept")
	}
}
