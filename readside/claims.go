package readside

import (
	"context"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
)

// What the consume room asks of the read side: the candidate partitions of
// an any-partition pop (marks), what a claim found, a lease's release, and
// parking a pop that found nothing. The claims themselves, the acks and the
// leases belong to the consume room; the read side keeps what wakes and
// steers them.

// Candidate is a partition an any-partition pop may claim.
type Candidate struct {
	ID   int64  // the partition's id; 0 while no pop here has learnt it (claim by Name)
	Name string // the partition's name
	c    candidate
}

// Candidates lists the partitions of a queue that may have messages past
// the group's cursor, starting at a rotating position so that consumers
// spread over them. The first call for a queue and group reads the
// database once; announcements keep the list after that.
func (r *Reads) Candidates(ctx context.Context, tenant tenancy.TenantID, queue, group string) ([]Candidate, error) {
	cs, err := r.marks.candidates(ctx, r.cfg.DB, tenant, queue, group, r.rotate.Add(1)*7919)
	if err != nil {
		return nil, err
	}
	out := make([]Candidate, len(cs))
	for i, c := range cs {
		out[i] = Candidate{ID: c.id, Name: c.p.name, c: c}
	}
	return out, nil
}

// Outcome records what a claim of candidate c found, so that later pops
// pass over a partition found empty or leased here.
func (r *Reads) Outcome(tenant tenancy.TenantID, queue, group string, c Candidate, res pgwire.PopResult) {
	if c.c.p == nil { // not one of Candidates'
		return
	}
	r.marks.outcome(tenant, queue, group, c.c, res)
}

// Reserve marks c as taken by a claim in progress here until its Outcome
// (at most about a second), so that the group's concurrent pops claim other
// partitions; false when a lease or another claim here holds it, and the
// pop passes it over. Every reserved candidate gets an Outcome: a zero
// PopResult (an error) frees it.
func (r *Reads) Reserve(tenant tenancy.TenantID, queue, group string, c Candidate) bool {
	if c.c.p == nil { // not one of Candidates'
		return true
	}
	return r.marks.reserve(tenant, queue, group, c.c)
}

// Released records that a lease on a partition ended (again: its messages
// after the cursor are deliverable again) and announces the partition,
// here and to peers: it may hold more than the lease delivered, or what it
// handed back, and pops parked on it claim it now instead of at their
// timeout.
func (r *Reads) Released(tenant tenancy.TenantID, queue, partition, group string, again bool) {
	r.marks.released(tenant, queue, partition, group, again)
	r.Announce([]Key{{Tenant: tenant, Queue: queue, Partition: partition}})
}

// Dropped is told that a queue was deleted (here or by a peer): reads and
// pops parked on it answer now, empty, and what steers pops to its
// partitions is forgotten. The caller also drops the hot tail's segments
// of it (Tail.Drop).
func (r *Reads) Dropped(tenant tenancy.TenantID, queue string) {
	r.marks.drop(tenant, queue)
	r.parked.drop(tenant, queue)
}

// Park runs look until it finds something, parking between looks on k
// (partition "": the whole queue) for up to wait, as a parked read does
// (lookParked). what names the call in the error of an abandoned context.
func Park[T any](r *Reads, ctx context.Context, k Key, wait time.Duration, what string, look func() (T, bool, error)) (T, error) {
	return lookParked(r, ctx, k, wait, what, look)
}
