package ownership

import (
	"fmt"
	"testing"

	"github.com/google/uuid"
)

func ids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = uuid.NewString()
	}
	return out
}

// Every bridge computes the same owners from the same members, whatever
// order it heard them in and whichever of them it is.
func TestEveryMemberComputesTheSameOwners(t *testing.T) {
	ms := ids(5)
	want := Assign(ms, 1024)
	for i := range ms {
		rev := append([]string{ms[i]}, ms[:i]...)
		rev = append(rev, ms[i+1:]...)
		tab := newTable(rev, ms[i], 1024)
		for b := range want {
			if tab.ownerOf(b) != want[b] {
				t.Fatalf("member %d: bucket %d owned by %s, want %s", i, b, tab.ownerOf(b), want[b])
			}
			if tab.owns(b) != (want[b] == ms[i]) {
				t.Fatalf("member %d: owns(%d) = %v", i, b, tab.owns(b))
			}
		}
	}
}

// A join moves only the buckets the newcomer takes; a leave moves only the
// leaver's. The shares stay near even.
func TestMembershipChangesMoveOnlyWhatTheyMust(t *testing.T) {
	const n = 1024
	ms := ids(4)
	three := Assign(ms[:3], n)
	four := Assign(ms, n)
	moved := 0
	for b := range four {
		if three[b] != four[b] {
			moved++
			if four[b] != ms[3] {
				t.Fatalf("bucket %d moved from %s to %s, not to the newcomer", b, three[b], four[b])
			}
		}
	}
	if moved < n/4-n/8 || moved > n/4+n/8 {
		t.Fatalf("a fourth bridge took %d of %d buckets", moved, n)
	}
	left := Assign([]string{ms[0], ms[2], ms[3]}, n) // ms[1] leaves
	for b := range four {
		if four[b] != left[b] && four[b] != ms[1] {
			t.Fatalf("bucket %d of %s moved when %s left", b, four[b], ms[1])
		}
	}
	count := map[string]int{}
	for _, o := range four {
		count[o]++
	}
	for _, id := range ms {
		if c := count[id]; c < n/4-n/8 || c > n/4+n/8 {
			t.Fatalf("shares %v", count)
		}
	}
	if a, b := newTable(ms[:3], ms[0], n), newTable(ms, ms[0], n); moves(a, b) != moved {
		t.Fatalf("moves %d, counted %d", moves(a, b), moved)
	}
}

// Partitions spread over the buckets, and the bucket depends on tenant,
// queue and partition alike.
func TestBucketsSpreadPartitions(t *testing.T) {
	seen := map[int]bool{}
	for i := 0; i < 5000; i++ {
		seen[BucketOf([16]byte{}, "q", fmt.Sprintf("p%d", i), 1024)] = true
	}
	if len(seen) < 1000 {
		t.Fatalf("5,000 partitions fell into %d of 1,024 buckets", len(seen))
	}
	a := BucketOf([16]byte{1}, "q", "p", 1<<20)
	if a == BucketOf([16]byte{2}, "q", "p", 1<<20) || a == BucketOf([16]byte{1}, "r", "p", 1<<20) || a == BucketOf([16]byte{1}, "q", "r", 1<<20) {
		t.Fatal("the bucket ignores part of the partition's name")
	}
}

func TestHeartbeatsParse(t *testing.T) {
	id := "0192a5f4-3b7c-7def-8123-456789abcdef"
	for in, want := range map[string]event{
		"alive " + id + " 0.618": {kind: kindAlive, id: id, busy: 0.618},
		"hello " + id:            {kind: kindHello, id: id},
		"leave " + id + " x":     {kind: kindLeave, id: id},
		"alive " + id + " -3":    {kind: kindAlive, id: id},
	} {
		if got, ok := parseBeat([]byte(in)); !ok || got != want {
			t.Fatalf("%q: %+v %v, want %+v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "alive", "shout " + id + " 1", " ", "alive abc 1", "alive queen.> 1", "alive {" + id + "} 1"} {
		if _, ok := parseBeat([]byte(in)); ok {
			t.Fatalf("%q parsed", in)
		}
	}
}

// Shares names every member, sorted, with the buckets the table gives it,
// which add up to all of them.
func TestShares(t *testing.T) {
	r := &Router{}
	r.tab.Store(newTable([]string{"c", "a", "b"}, "b", 1024))
	ids, owned := r.Shares()
	if len(ids) != 3 || ids[0] != "a" || ids[1] != "b" || ids[2] != "c" || len(owned) != 3 {
		t.Fatalf("%v %v", ids, owned)
	}
	sum := 0
	for i, n := range owned {
		sum += n
		if want := countOwned(r.tab.Load(), i); n != want || n == 0 {
			t.Errorf("%s owns %d, the table says %d", ids[i], n, want)
		}
	}
	if sum != 1024 || owned[1] != r.tab.Load().owned() {
		t.Fatalf("owned %v", owned)
	}
}

func countOwned(t *table, member int) int {
	n := 0
	for b := range t.owner {
		if t.ownerOf(b) == t.members[member] {
			n++
		}
	}
	return n
}
