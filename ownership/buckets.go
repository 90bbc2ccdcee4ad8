package ownership

import (
	"encoding/binary"
	"slices"

	"github.com/queenbridge/queenbridge/internal/buckets"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/zeebo/xxh3"
)

// BucketOf is the bucket of a partition among n buckets
// (internal/buckets: partition-aware clients compute it too).
func BucketOf(tenant tenancy.TenantID, queue, partition string, n int) int {
	return buckets.Of(tenant, queue, partition, n)
}

// score is member id's rendezvous weight for bucket b.
func score(idHash uint64, b int) uint64 {
	var buf [16]byte
	binary.LittleEndian.PutUint64(buf[:8], idHash)
	binary.LittleEndian.PutUint64(buf[8:], uint64(b))
	return xxh3.Hash(buf[:])
}

// Assign lists the owner of each of n buckets among members: what every
// bridge with that member list computes.
func Assign(members []string, n int) []string {
	t := newTable(members, "", n)
	out := make([]string, n)
	for b := range out {
		out[b] = t.ownerOf(b)
	}
	return out
}

// table is one membership's answer for every bucket. It is never changed
// after it is built.
type table struct {
	members []string // sorted ids
	owner   []int32  // bucket -> index into members
	self    int32    // this bridge's index
	client  []byte   // the table as clients read it (clients.go)
}

// newTable computes the owner of each of n buckets among members (which
// must contain self): the member with the highest score, ties to the lower
// id.
func newTable(members []string, self string, n int) *table {
	ms := slices.Clone(members)
	slices.Sort(ms)
	ms = slices.Compact(ms)
	hs := make([]uint64, len(ms))
	t := &table{members: ms, owner: make([]int32, n)}
	for i, id := range ms {
		hs[i] = xxh3.HashString(id)
		if id == self {
			t.self = int32(i)
		}
	}
	for b := 0; b < n; b++ {
		best, bestScore := int32(0), uint64(0)
		for i := range ms {
			if s := score(hs[i], b); i == 0 || s > bestScore {
				best, bestScore = int32(i), s
			}
		}
		t.owner[b] = best
	}
	return t
}

// ownerOf is bucket b's owner id.
func (t *table) ownerOf(b int) string { return t.members[t.owner[b]] }

// owns reports whether this bridge owns bucket b.
func (t *table) owns(b int) bool { return t.owner[b] == t.self }

// owned counts the buckets this bridge owns.
func (t *table) owned() int {
	n := 0
	for _, o := range t.owner {
		if o == t.self {
			n++
		}
	}
	return n
}

// moves counts the buckets whose owner differs between a and b.
func moves(a, b *table) int {
	n := 0
	for i := range b.owner {
		if a.ownerOf(i) != b.ownerOf(i) {
			n++
		}
	}
	return n
}
