package consume

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/cursors"
	"github.com/queenbridge/queenbridge/pgwire"
)

func TestPopOfANamedPartition(t *testing.T) {
	t.Parallel()
	from := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	for _, status := range []string{pgwire.PopDelivered, pgwire.PopEmpty, pgwire.PopLeased, pgwire.PopWindow, pgwire.PopMissing} {
		t.Run(status, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			if status == pgwire.PopDelivered {
				r.store.popByKey["p"] = delivers(4, "p", 3, 10)
			} else {
				r.store.popByKey["p"] = answers(status, 4, "p")
			}
			got, err := r.c.Pop(context.Background(), tenant, PopRequest{Queue: "q", Partition: "p", Group: "g", Batch: 5, Partitions: 3,
				MaxBytes: 9999, SubscriptionMode: "new", SubscriptionFrom: from})
			if err != nil {
				t.Fatal(err)
			}
			pops := r.store.popCalls()
			if len(pops) != 1 {
				t.Fatalf("claims: %+v", pops)
			}
			want := pgwire.PopRequest{Tenant: tenant, Queue: "q", Partition: "p", Group: "g", Lease: got.Lease, Batch: 5, MaxBytes: 9999,
				SubscriptionMode: "new", SubscriptionFrom: from}
			if pops[0] != want {
				t.Errorf("claim %+v, want %+v", pops[0], want)
			}
			if got.Lease == ([16]byte{}) {
				t.Error("a pop without auto-ack has no lease")
			}
			if r.marks.candCalls != 0 || len(r.marks.outcomes) != 0 {
				t.Errorf("a named partition asked the marks: %d candidates, %d outcomes", r.marks.candCalls, len(r.marks.outcomes))
			}
			n := 0
			if status == pgwire.PopDelivered {
				n = 3
				if len(got.Parts) != 1 || got.Parts[0].PartitionID != 4 || got.Count() != 3 {
					t.Errorf("delivered %+v", got)
				}
			} else if len(got.Parts) != 0 {
				t.Errorf("%s delivered %+v", status, got.Parts)
			}
			if s := r.c.Stats(); s != (Stats{Pops: 1, Claims: 1, Delivered: uint64(n)}) {
				t.Errorf("stats %+v", s)
			}
			if !slices.Equal(r.obs.popped, []int{n}) {
				t.Errorf("observer heard %v", r.obs.popped)
			}
		})
	}
}

func TestPopOfANamedPartitionThatFails(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	boom := errors.New("connection lost")
	r.store.popByKey["p"] = fails(boom)
	got, err := r.c.Pop(context.Background(), tenant, PopRequest{Queue: "q", Partition: "p", Group: "g", Batch: 5, Partitions: 1})
	if !errors.Is(err, boom) || len(got.Parts) != 0 {
		t.Fatalf("got %+v, %v", got, err)
	}
	if len(r.obs.popped) != 0 {
		t.Errorf("a failed pop was counted: %v", r.obs.popped)
	}
}

// anyPop pops any partition of queue q for group g.
func anyPop(r *rig, batch, partitions int, maxBytes int64) (Popped, error) {
	return r.c.Pop(context.Background(), tenant, PopRequest{Queue: "q", Group: "g", Batch: batch, Partitions: partitions, MaxBytes: maxBytes})
}

func TestAnyPartitionPopClaimsByIDOrNameAndStopsAtPartitions(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.marks.cands = []cursors.Candidate{{ID: 7, Name: "a"}, {Name: "b"}, {ID: 9, Name: "c"}}
	r.store.popByID[7] = delivers(7, "a", 2, 10)
	r.store.popByKey["b"] = delivers(8, "b", 2, 10)
	r.store.popByID[9] = delivers(9, "c", 2, 10)
	got, err := anyPop(r, 10, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	pops := r.store.popCalls()
	if len(pops) != 2 {
		t.Fatalf("%d claims for 2 partitions: %+v", len(pops), pops)
	}
	if pops[0].PartitionID != 7 || pops[0].Partition != "" || pops[1].PartitionID != 0 || pops[1].Partition != "b" {
		t.Errorf("claims by id when known, else by name: %+v", pops)
	}
	if pops[0].Batch != 10 || pops[1].Batch != 8 {
		t.Errorf("batches %d, %d; want 10 then what is left, 8", pops[0].Batch, pops[1].Batch)
	}
	for _, p := range pops {
		if p.Tenant != tenant || p.Queue != "q" || p.Group != "g" || p.Lease != got.Lease || got.Lease == ([16]byte{}) {
			t.Errorf("claim %+v under lease %x", p, got.Lease)
		}
	}
	if len(got.Parts) != 2 || got.Count() != 4 || got.Parts[0].Partition != "a" || got.Parts[1].Partition != "b" {
		t.Errorf("delivered %+v", got.Parts)
	}
	if len(r.marks.outcomes) != 2 || r.marks.outcomes[0].cand.Name != "a" || r.marks.outcomes[1].cand.Name != "b" ||
		r.marks.outcomes[1].res.PartitionID != 8 {
		t.Errorf("outcomes %+v", r.marks.outcomes)
	}
	if s := r.c.Stats(); s != (Stats{Pops: 1, Claims: 2, Delivered: 4}) {
		t.Errorf("stats %+v", s)
	}
	if !slices.Equal(r.obs.popped, []int{4}) {
		t.Errorf("observer heard %v", r.obs.popped)
	}
}

func TestAnyPartitionPopStopsAtTheBatch(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for i := int64(1); i <= 3; i++ {
		name := fmt.Sprint("p", i)
		r.marks.cands = append(r.marks.cands, cursors.Candidate{ID: i, Name: name})
		r.store.popByID[i] = delivers(i, name, 2, 10)
	}
	got, err := anyPop(r, 3, 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	pops := r.store.popCalls()
	if len(pops) != 2 || pops[0].Batch != 3 || pops[1].Batch != 1 {
		t.Fatalf("claims %+v; want batches 3, then 1", pops)
	}
	if got.Count() != 3 || len(got.Parts) != 2 {
		t.Errorf("delivered %+v", got.Parts)
	}
}

// Candidates that turn out leased or empty cost a claim each; a pop stops
// after maxClaimTries, even before a candidate that would deliver.
func TestAnyPartitionPopGivesUpAfterMaxClaimTries(t *testing.T) {
	t.Parallel()
	if maxClaimTries != 16 {
		t.Fatalf("maxClaimTries is %d", maxClaimTries)
	}
	r := newRig(t)
	statuses := []string{pgwire.PopEmpty, pgwire.PopLeased, pgwire.PopWindow, pgwire.PopMissing}
	for i := int64(1); i <= 20; i++ {
		name := fmt.Sprint("p", i)
		r.marks.cands = append(r.marks.cands, cursors.Candidate{ID: i, Name: name})
		if i > maxClaimTries {
			r.store.popByID[i] = delivers(i, name, 1, 10)
		} else {
			r.store.popByID[i] = answers(statuses[i%4], i, name)
		}
	}
	got, err := anyPop(r, 100, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.store.popCalls()); n != maxClaimTries {
		t.Errorf("%d claims", n)
	}
	if len(got.Parts) != 0 {
		t.Errorf("delivered %+v", got.Parts)
	}
	if len(r.marks.outcomes) != maxClaimTries {
		t.Errorf("%d outcomes told for %d claims", len(r.marks.outcomes), maxClaimTries)
	}
	for i, o := range r.marks.outcomes {
		if o.cand.ID != int64(i+1) || o.res.Status != statuses[(i+1)%4] {
			t.Errorf("outcome %d: %+v", i, o)
		}
	}
	if s := r.c.Stats(); s != (Stats{Pops: 1, Claims: maxClaimTries}) {
		t.Errorf("stats %+v", s)
	}
	if !slices.Equal(r.obs.popped, []int{0}) {
		t.Errorf("observer heard %v", r.obs.popped)
	}
}

// A further partition is claimed only while at least half the byte bound
// is left, and each claim is given what is left of it.
func TestAnyPartitionPopKeepsToHalfTheByteBound(t *testing.T) {
	t.Parallel()
	m := message(1, "p1-1", 100)
	cost := pgwire.PopCost(&m.Frame, "p1", "g")
	for _, c := range []struct {
		maxBytes int64
		want     []int64 // the bound each claim was given
	}{
		{3 * cost, []int64{3 * cost, 3 * cost, 2 * cost}}, // after two: a third left
		{2 * cost, []int64{2 * cost, 2 * cost, cost}},     // after one: exactly half left
		{cost / 2, []int64{cost / 2, cost / 2}},           // one message over the bound still goes
	} {
		t.Run(fmt.Sprint(c.maxBytes), func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			// An empty first candidate delivers nothing and uses no bytes.
			r.marks.cands = []cursors.Candidate{{ID: 100, Name: "p0"}}
			r.store.popByID[100] = answers(pgwire.PopEmpty, 100, "p0")
			for i := int64(1); i <= 5; i++ {
				name := fmt.Sprint("p", i)
				r.marks.cands = append(r.marks.cands, cursors.Candidate{ID: i, Name: name})
				r.store.popByID[i] = delivers(i, name, 1, 100)
			}
			got, err := anyPop(r, 100, 100, c.maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			var bounds []int64
			for _, p := range r.store.popCalls() {
				bounds = append(bounds, p.MaxBytes)
			}
			if !slices.Equal(bounds, c.want) {
				t.Errorf("bounds given %v, want %v (a message costs %d)", bounds, c.want, cost)
			}
			if got.Count() != len(c.want)-1 {
				t.Errorf("delivered %d", got.Count())
			}
		})
	}
}

// Without a byte bound every claim is given none (0), however much the
// claims before it delivered.
func TestAnyPartitionPopWithoutAByteBound(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	for i := int64(1); i <= 3; i++ {
		name := fmt.Sprint("p", i)
		r.marks.cands = append(r.marks.cands, cursors.Candidate{ID: i, Name: name})
		r.store.popByID[i] = delivers(i, name, 2, 1000)
	}
	got, err := anyPop(r, 100, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.store.popCalls() {
		if p.MaxBytes != 0 {
			t.Errorf("claim of partition %d given a bound of %d bytes", p.PartitionID, p.MaxBytes)
		}
	}
	if got.Count() != 6 {
		t.Errorf("delivered %d", got.Count())
	}
}

func TestPopCountsLeaseExpiries(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	expired := func(pid int64, name string, n int) func(pgwire.PopRequest) (pgwire.PopResult, error) {
		return func(req pgwire.PopRequest) (pgwire.PopResult, error) {
			res, err := delivers(pid, name, n, 10)(req)
			res.Expired = true
			return res, err
		}
	}
	r.marks.cands = []cursors.Candidate{{ID: 1, Name: "a"}, {ID: 2, Name: "b"}, {ID: 3, Name: "c"}}
	r.store.popByID[1] = expired(1, "a", 2)
	r.store.popByID[2] = answers(pgwire.PopLeased, 2, "b")
	r.store.popByID[3] = expired(3, "c", 1)
	r.store.popByKey["n"] = expired(4, "n", 1)
	if _, err := anyPop(r, 10, 5, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := r.c.Pop(context.Background(), tenant, PopRequest{Queue: "q", Partition: "n", Group: "g", Batch: 10, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	if s := r.c.Stats(); s != (Stats{Pops: 2, Claims: 4, LeaseExpiries: 3, Delivered: 4}) {
		t.Errorf("stats %+v", s)
	}
	if !slices.Equal(r.obs.popped, []int{3, 1}) {
		t.Errorf("observer heard %v", r.obs.popped)
	}
}

// A claim that fails ends the round: what was delivered before it goes out
// with the error (its lease holds those partitions).
func TestAnyPartitionPopThatFailsMidRound(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	boom := errors.New("statement timeout")
	r.marks.cands = []cursors.Candidate{{ID: 1, Name: "a"}, {ID: 2, Name: "b"}, {ID: 3, Name: "c"}, {ID: 4, Name: "d"}}
	r.store.popByID[1] = delivers(1, "a", 2, 10)
	r.store.popByID[2] = delivers(2, "b", 1, 10)
	r.store.popByID[3] = fails(boom)
	r.store.popByID[4] = delivers(4, "d", 1, 10)
	got, err := anyPop(r, 10, 10, 0)
	if !errors.Is(err, boom) {
		t.Fatalf("error %v", err)
	}
	if len(got.Parts) != 2 || got.Count() != 3 || got.Lease == ([16]byte{}) {
		t.Errorf("delivered %+v", got)
	}
	if n := len(r.store.popCalls()); n != 3 {
		t.Errorf("%d claims; want none after the failure", n)
	}
	// Two claims' outcomes, and the failed claim's reservation freed.
	if o := r.marks.outcomes; len(o) != 3 || o[2].cand.Name != "c" || o[2].res.Status != "" {
		t.Errorf("outcomes %+v", r.marks.outcomes)
	}
	if !slices.Equal(r.obs.popped, []int{3}) {
		t.Errorf("observer heard %v", r.obs.popped)
	}
}

// A candidate another pop here is claiming (its reservation refused) is
// passed over: no claim of it, and the round goes on to the next.
func TestAnyPartitionPopPassesOverAReservedPartition(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.marks.cands = []cursors.Candidate{{ID: 1, Name: "a"}, {ID: 2, Name: "b"}}
	r.marks.held = map[string]bool{"a": true}
	r.store.popByID[1] = delivers(1, "a", 2, 10)
	r.store.popByID[2] = delivers(2, "b", 1, 10)
	got, err := anyPop(r, 10, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Parts) != 1 || got.Parts[0].Partition != "b" {
		t.Errorf("delivered %+v", got)
	}
	if calls := r.store.popCalls(); len(calls) != 1 || calls[0].PartitionID != 2 {
		t.Errorf("claims %+v; want b's alone", calls)
	}
	if r.marks.reserved != 1 {
		t.Errorf("%d reservations; want b's", r.marks.reserved)
	}
}

func TestAnyPartitionPopWhoseCandidatesFail(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	boom := errors.New("no candidates")
	r.marks.candErr = boom
	got, err := anyPop(r, 10, 10, 0)
	if !errors.Is(err, boom) || len(got.Parts) != 0 {
		t.Fatalf("got %+v, %v", got, err)
	}
	if n := len(r.store.popCalls()); n != 0 {
		t.Errorf("%d claims", n)
	}
}

func TestPopInMaintenanceDeliversNothing(t *testing.T) {
	t.Parallel()
	for _, pop := range []bool{false, true} {
		r := newRig(t)
		r.maint.Store(!pop)
		r.popMaint.Store(pop)
		popInMaintenance(t, r)
		// Off again, the same rig's pop delivers.
		r.maint.Store(false)
		r.popMaint.Store(false)
		r.store.popByKey["a"] = delivers(1, "a", 2, 10)
		if got, err := r.c.Pop(context.Background(), tenant, PopRequest{Queue: "q", Partition: "a", Group: "g", Batch: 10, Partitions: 1}); err != nil || got.Count() != 2 {
			t.Fatalf("out of maintenance: %+v, %v", got, err)
		}
	}
}

func popInMaintenance(t *testing.T, r *rig) {
	t.Helper()
	r.marks.cands = []cursors.Candidate{{ID: 1, Name: "a"}}
	r.store.popByID[1] = delivers(1, "a", 2, 10)
	r.store.popByKey["a"] = delivers(1, "a", 2, 10)
	for _, part := range []string{"", "a"} {
		got, err := r.c.Pop(context.Background(), tenant, PopRequest{Queue: "q", Partition: part, Group: "g", Batch: 10, Partitions: 1})
		if err != nil || len(got.Parts) != 0 || got.Lease != ([16]byte{}) {
			t.Errorf("partition %q: %+v, %v", part, got, err)
		}
	}
	if n := len(r.store.popCalls()); n != 0 || r.marks.candCalls != 0 {
		t.Errorf("%d claims, %d candidate lists in maintenance", n, r.marks.candCalls)
	}
	if s := r.c.Stats(); s != (Stats{}) {
		t.Errorf("stats %+v", s)
	}
}

func TestAutoAckPopHasNoLease(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.store.popByKey["a"] = delivers(1, "a", 2, 10)
	got, err := r.c.Pop(context.Background(), tenant, PopRequest{Queue: "q", Partition: "a", Group: "g", Batch: 10, Partitions: 1, AutoAck: true})
	if err != nil || got.Count() != 2 || got.Lease != ([16]byte{}) {
		t.Fatalf("got %+v, %v", got, err)
	}
	if p := r.store.popCalls()[0]; !p.AutoAck || p.Lease != ([16]byte{}) {
		t.Errorf("claim %+v", p)
	}
}
