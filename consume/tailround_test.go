package consume

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/cursors"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

// The hot tail's part of an any-partition pop reserves each candidate it
// takes, and the first one it cannot serve; when the claim statement
// refuses what it took, those candidates go to PostgreSQL first, still
// reserved. These tests end the PostgreSQL round early, or fail one of its
// claims, and check that every reservation ends in exactly one Outcome: a
// delivery for a partition claimed, an empty result (which frees it) for
// every other, and none for a candidate never reserved.

// refusedNames are the candidates of refusedRoundRig, ids 1 to 6 in order.
var refusedNames = []string{"a", "b", "c", "d", "e", "f"}

// refusedRoundRig is a rig whose candidates are a to f (ids 1 to 6), each
// claimed in PostgreSQL as deliver says: n messages of size bytes (1 when
// deliver does not name it), or the error fail when its id is failAt. Its
// hot tail holds one message of each of a, b and c after the group's
// cursor and nothing of d, e and f, and the fake store refuses every claim
// from the tail. So the tail's round takes a, b and c, reserves d and ends
// there (it cannot serve d); the claim statement refuses a, b and c; and
// the PostgreSQL round starts with a, b, c and d, reserved, then e and f,
// not.
func refusedRoundRig(t *testing.T, deliver map[int64]int, size int, failAt int64, fail error) *rig {
	t.Helper()
	tail := cursors.NewTail(1 << 20)
	tail.Want(tenant, "q")
	var writes []segment.Write
	var results []segment.Result
	for id := int64(1); id <= 3; id++ {
		name := refusedNames[id-1]
		w := segmentOf("q", name, []segment.Frame{{ID: uuid.Must(uuid.NewV7()), TransactionID: name + "-tail", Payload: []byte(`{}`)}})
		w.Tenant = tenant
		writes = append(writes, w)
		results = append(results, segment.Result{Status: segment.Queued, PartitionID: id, BaseOffset: 1, CreatedAt: time.Now()})
	}
	tail.Committed(writes, results)
	for id := int64(1); id <= 3; id++ {
		tail.SetCursor(id, "g", 0)
		if _, ok := tail.Take(id, "g", 10); !ok {
			t.Fatalf("the tail takes nothing of partition %d", id)
		}
	}
	r := newRigWithTail(t, tail)
	for i, name := range refusedNames {
		id := int64(i + 1)
		r.marks.cands = append(r.marks.cands, cursors.Candidate{ID: id, Name: name})
		n, ok := deliver[id]
		if !ok {
			n = 1
		}
		r.store.popByID[id] = delivers(id, name, n, size)
		if id == failAt {
			r.store.popByID[id] = fails(fail)
		}
	}
	return r
}

// wantTailRefusedABC checks that the round went as refusedRoundRig says:
// one claim statement from the tail, of a, b and c, and the claims in
// PostgreSQL of the partitions pg, in order.
func wantTailRefusedABC(t *testing.T, r *rig, pg []int64) {
	t.Helper()
	if got := r.store.tailPopCalls(); !slices.EqualFunc(got, [][]int64{{1, 2, 3}}, slices.Equal[[]int64]) {
		t.Errorf("claim statements from the tail %v, want one of a, b and c (1, 2, 3)", got)
	}
	var ids []int64
	for _, p := range r.store.popCalls() {
		ids = append(ids, p.PartitionID)
	}
	if !slices.Equal(ids, pg) {
		t.Errorf("claims in PostgreSQL of partitions %v, want %v", ids, pg)
	}
}

// wantReservationsEnded checks that the candidates reserved are exactly
// those want names, each ending in one Outcome: a delivery of that
// partition (pgwire.PopDelivered) or an empty result (""), which frees it;
// and that what stays reserved is the deliveries only.
func wantReservationsEnded(t *testing.T, r *rig, want map[string]string) {
	t.Helper()
	var wantReserved []string
	for name := range want {
		wantReserved = append(wantReserved, name)
	}
	slices.Sort(wantReserved)
	reserved := slices.Sorted(slices.Values(r.marks.reservedNames))
	if !slices.Equal(reserved, wantReserved) {
		t.Errorf("reserved %v, want %v", reserved, wantReserved)
	}
	told := map[string]int{}
	delivered, freed := 0, 0
	for _, o := range r.marks.outcomes {
		name := o.cand.Name
		told[name]++
		status, ok := want[name]
		switch {
		case !ok:
			t.Errorf("an outcome for %s, never reserved: %+v", name, o.res)
		case status == pgwire.PopDelivered:
			if o.res.Status != pgwire.PopDelivered || o.res.Partition != name || len(o.res.Messages) == 0 {
				t.Errorf("outcome for %s: %+v, want its delivery", name, o.res)
			}
		default:
			if o.res.Status != "" || o.res.PartitionID != 0 || len(o.res.Messages) != 0 {
				t.Errorf("outcome for %s: %+v, want an empty result (freed)", name, o.res)
			}
		}
		if o.res.Status == pgwire.PopDelivered {
			delivered++
		} else {
			freed++
		}
	}
	for _, name := range refusedNames {
		if _, ok := want[name]; ok && told[name] != 1 {
			t.Errorf("%d outcomes for %s, want 1 (%q)", told[name], name, want[name])
		}
	}
	if outstanding := r.marks.reserved - freed; outstanding != delivered {
		t.Errorf("%d reservations outstanding (%d granted, %d freed), want the %d deliveries'", outstanding, r.marks.reserved, freed, delivered)
	}
}

// The PostgreSQL round stops before every candidate is claimed: those the
// tail reserved and nobody claimed are freed, and those after them, never
// reserved, are told nothing.
func TestAnyPartitionPopFreesTheTailsReservationsWhenItsRoundStopsEarly(t *testing.T) {
	t.Parallel()
	big := message(1, "a-1", 1000)
	bigCost := pgwire.PopCost(&big.Frame, "a", "g")
	const d = pgwire.PopDelivered
	for _, c := range []struct {
		name     string
		batch    int
		maxBytes int64
		deliver  map[int64]int
		size     int
		pg       []int64 // the partitions claimed in PostgreSQL
		count    int     // the messages delivered
		want     map[string]string
	}{
		{name: "the batch is full after the first", batch: 4, deliver: map[int64]int{1: 4}, size: 10,
			pg: []int64{1}, count: 4, want: map[string]string{"a": d, "b": "", "c": "", "d": ""}},
		{name: "the byte bound is reached after the first", batch: 100, maxBytes: 4 * bigCost, deliver: map[int64]int{1: 4}, size: 1000,
			pg: []int64{1}, count: 4, want: map[string]string{"a": d, "b": "", "c": "", "d": ""}},
		{name: "the batch is full after the last the tail reserved", batch: 4, size: 10,
			pg: []int64{1, 2, 3, 4}, count: 4, want: map[string]string{"a": d, "b": d, "c": d, "d": d}},
		{name: "the batch is full after one the tail did not reserve", batch: 5, size: 10,
			pg: []int64{1, 2, 3, 4, 5}, count: 5, want: map[string]string{"a": d, "b": d, "c": d, "d": d, "e": d}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := refusedRoundRig(t, c.deliver, c.size, 0, nil)
			got, err := anyPop(r, c.batch, 10, c.maxBytes)
			if err != nil {
				t.Fatal(err)
			}
			wantTailRefusedABC(t, r, c.pg)
			var parts []string
			for _, p := range got.Parts {
				parts = append(parts, p.Partition)
			}
			if !slices.Equal(parts, refusedNames[:len(c.pg)]) || got.Count() != c.count {
				t.Errorf("delivered %d messages of %v, want %d of %v", got.Count(), parts, c.count, refusedNames[:len(c.pg)])
			}
			wantReservationsEnded(t, r, c.want)
		})
	}
}

// A claim in PostgreSQL fails: the failed candidate and those after it the
// tail reserved are freed, what was delivered before it goes out with the
// error, and the candidates never reserved are told nothing.
func TestAnyPartitionPopFreesTheTailsReservationsWhenAClaimFails(t *testing.T) {
	t.Parallel()
	boom := errors.New("statement timeout")
	const d = pgwire.PopDelivered
	for _, c := range []struct {
		name   string
		failAt int64
		want   map[string]string
	}{
		{name: "the first", failAt: 1, want: map[string]string{"a": "", "b": "", "c": "", "d": ""}},
		{name: "one the tail refused", failAt: 2, want: map[string]string{"a": d, "b": "", "c": "", "d": ""}},
		{name: "the last the tail reserved", failAt: 4, want: map[string]string{"a": d, "b": d, "c": d, "d": ""}},
		{name: "the first the tail did not reserve", failAt: 5, want: map[string]string{"a": d, "b": d, "c": d, "d": d, "e": ""}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := refusedRoundRig(t, nil, 10, c.failAt, boom)
			got, err := anyPop(r, 10, 10, 0)
			if !errors.Is(err, boom) {
				t.Fatalf("error %v", err)
			}
			var pg []int64
			for id := int64(1); id <= c.failAt; id++ {
				pg = append(pg, id)
			}
			wantTailRefusedABC(t, r, pg)
			var parts []string
			for _, p := range got.Parts {
				parts = append(parts, p.Partition)
			}
			if before := refusedNames[:c.failAt-1]; !slices.Equal(parts, before) {
				t.Errorf("delivered %v with the error, want %v", parts, before)
			}
			wantReservationsEnded(t, r, c.want)
		})
	}
}

// The tail's claim statement fails: every reservation of its round is
// freed, the candidate it could not serve (d) too, and nothing is claimed
// in PostgreSQL.
func TestAnyPartitionPopFreesTheTailsReservationsWhenItsClaimFails(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset")
	r := refusedRoundRig(t, nil, 10, 0, nil)
	r.store.tailErr = boom
	if _, err := anyPop(r, 10, 10, 0); !errors.Is(err, boom) {
		t.Fatalf("error %v", err)
	}
	wantTailRefusedABC(t, r, nil)
	wantReservationsEnded(t, r, map[string]string{"a": "", "b": "", "c": "", "d": ""})
}
