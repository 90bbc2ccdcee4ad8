package cursors

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
)

// Marks is what this bridge knows about the partitions of the queues that
// are consumed through it: which partitions exist, a count of the
// announcements each received (this bridge's pushes and peers'
// MESSAGE_AVAILABLE, which the read side hands it: Heard), and per consumer
// group the count at which a pop last found the partition empty, and until
// when a lease taken here (or a claim in progress here) holds it. A
// partition is a candidate for a group's any-partition pop when it has been
// announced since it was last found empty, and no lease or claim here holds
// it. The first pop of a queue and group reads the database once
// (PendingPartitions); after that the list is kept from announcements.
//
// Pops and acks (one goroutine each) and announcers read and write it: a
// mutex guards the maps, held for map operations only, never across a
// database call.
type Marks struct {
	db     MarksStore
	mu     sync.Mutex
	queues map[queueRef]*queueMarks
	n      atomic.Int64  // queues tracked: announcements skip the lock while 0
	rotate atomic.Uint64 // where the next any-partition pop starts in its candidates
}

// MarksStore is what the marks ask of the database: the partitions of a
// queue with messages past a group's cursor, read once per queue and
// group. *pgwire.DB satisfies it.
type MarksStore interface {
	PendingPartitions(ctx context.Context, tenant tenancy.TenantID, queue, group string) ([]pgwire.PartitionMark, error)
}

// queueRef names a queue of a tenant (the marks' and the tail's maps).
type queueRef struct {
	tenant tenancy.TenantID
	queue  string
}

type partMark struct {
	id   int64 // 0 until a pop learns it
	name string
	seq  uint64 // announcements received
}

type queueMarks struct {
	parts  map[string]*partMark
	list   []*partMark // the same partitions, in the order they became known
	groups map[string]*groupMarks
}

type groupMarks struct {
	loaded  bool
	drained map[*partMark]uint64    // seq when a pop here found it empty
	leased  map[*partMark]time.Time // a lease taken here holds it until then
}

// leaseHint bounds how long a lease taken here keeps its partition out of
// this bridge's candidates.
const leaseHint = time.Second

// NewMarks makes the marks of a bridge; db answers the first pop of each
// queue and group.
func NewMarks(db MarksStore) (*Marks, error) {
	if db == nil {
		return nil, errors.New("cursors: NewMarks needs a database (MarksStore)")
	}
	return &Marks{db: db, queues: map[queueRef]*queueMarks{}}, nil
}

// Candidate is a partition an any-partition pop may claim.
type Candidate struct {
	ID   int64  // the partition's id; 0 while no pop here has learnt it (claim by Name)
	Name string // the partition's name
	p    *partMark
	seq  uint64 // the partition's announcements when it was chosen
}

// Heard records an announcement of a partition (a push committed to it,
// here or on a peer, pushed or not); the read side calls it for every
// announcement it makes or takes (readside.Listener).
func (m *Marks) Heard(tenant tenancy.TenantID, queue, partition string, _ bool) {
	m.tracked(tenant, queue, func(q *queueMarks) { q.part(partition, 0).seq++ })
}

// tracked runs fn under mu on the marks of a queue consumed through this
// bridge; nothing when it is not one. While no queue is, it takes no lock:
// announcements of every push pass here.
func (m *Marks) tracked(tenant tenancy.TenantID, queue string, fn func(q *queueMarks)) {
	if m.n.Load() == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if q := m.queues[queueRef{tenant, queue}]; q != nil {
		fn(q)
	}
}

// Listening reports whether any queue is consumed through this bridge, so
// that the read side need not decode a peer's announcement nobody here
// would use.
func (m *Marks) Listening() bool { return m.n.Load() > 0 }

// part returns the mark of a partition, made when new. Under mu.
func (q *queueMarks) part(name string, id int64) *partMark {
	p := q.parts[name]
	if p == nil {
		p = &partMark{name: name, seq: 1}
		q.parts[name] = p
		q.list = append(q.list, p)
	}
	if id > 0 {
		p.id = id
	}
	return p
}

func (q *queueMarks) group(g string) *groupMarks {
	gm := q.groups[g]
	if gm == nil {
		gm = &groupMarks{drained: map[*partMark]uint64{}, leased: map[*partMark]time.Time{}}
		q.groups[g] = gm
	}
	return gm
}

// Candidates lists the partitions of a queue that may have messages past
// the group's cursor, starting at a rotating position so that consumers
// spread over them. The first call for a queue and group reads the
// database once; announcements keep the list after that.
func (m *Marks) Candidates(ctx context.Context, tenant tenancy.TenantID, queue, group string) ([]Candidate, error) {
	return m.candidates(ctx, tenant, queue, group, m.rotate.Add(1)*7919)
}

// candidates lists the candidates from position start on.
func (m *Marks) candidates(ctx context.Context, tenant tenancy.TenantID, queue, group string, start uint64) ([]Candidate, error) {
	qk := queueRef{tenant, queue}
	m.mu.Lock()
	q := m.queues[qk]
	loaded := q != nil && q.groups[group] != nil && q.groups[group].loaded
	m.mu.Unlock()
	if !loaded {
		if err := m.load(ctx, qk, group); err != nil {
			return nil, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	q = m.queues[qk]
	if q == nil {
		return nil, nil // deleted while it was read (drop)
	}
	gm := q.group(group)
	now := time.Now()
	var out []Candidate
	n := len(q.list)
	for i := 0; i < n; i++ {
		p := q.list[(int(start%uint64(n))+i)%n]
		if d, ok := gm.drained[p]; ok && d >= p.seq {
			continue
		}
		if until, ok := gm.leased[p]; ok {
			if now.Before(until) {
				continue
			}
			delete(gm.leased, p)
		}
		out = append(out, Candidate{ID: p.id, Name: p.name, p: p, seq: p.seq})
	}
	return out, nil
}

// load reads the partitions with messages past the group's cursors; the
// queue's other known partitions count as drained for the group.
func (m *Marks) load(ctx context.Context, qk queueRef, group string) error {
	m.mu.Lock()
	q := m.queues[qk]
	if q == nil {
		q = &queueMarks{parts: map[string]*partMark{}, groups: map[string]*groupMarks{}}
		m.queues[qk] = q
		m.n.Add(1)
	}
	// Announcements from here on are counted: one that lands while the
	// database is read leaves its partition a candidate.
	before := map[*partMark]uint64{}
	for _, p := range q.list {
		before[p] = p.seq
	}
	m.mu.Unlock()
	pending, err := m.db.PendingPartitions(ctx, qk.tenant, qk.queue, group)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	gm := q.group(group)
	if gm.loaded {
		return nil
	}
	isPending := map[string]bool{}
	for _, pm := range pending {
		isPending[pm.Name] = true
		q.part(pm.Name, pm.ID)
	}
	for p, seq := range before {
		if !isPending[p.name] {
			gm.drained[p] = seq
		}
	}
	gm.loaded = true
	return nil
}

// Outcome records what a claim of candidate c found, so that later pops
// pass over a partition found empty or leased here; it ends c's
// reservation (Reserve): a zero PopResult (an error) frees it.
func (m *Marks) Outcome(tenant tenancy.TenantID, queue, group string, c Candidate, res pgwire.PopResult) {
	if c.p == nil { // not one of Candidates'
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queues[queueRef{tenant, queue}]
	if q == nil {
		return
	}
	gm := q.group(group)
	if res.PartitionID > 0 {
		c.p.id = res.PartitionID
	}
	switch res.Status {
	case pgwire.PopEmpty:
		// Messages past the cursor still too young to deliver
		// (delayedProcessing) come due without an announcement: the
		// partition stays a candidate.
		if res.Last <= res.Cursor && gm.drained[c.p] < c.seq {
			gm.drained[c.p] = c.seq
		}
	case pgwire.PopDelivered:
		// A hint, not the lease: the ack may reach another bridge, whose
		// release this one does not hear of. A claim of a leased partition
		// is refused by the database anyway; the hint spares this bridge's
		// other consumers that round trip for a while.
		if !res.LeaseExpires.IsZero() {
			until := time.Now().Add(leaseHint)
			if res.LeaseExpires.Before(until) {
				until = res.LeaseExpires
			}
			gm.leased[c.p] = until
		}
	case pgwire.PopMissing:
		gm.drained[c.p] = c.seq
	}
	if res.Status != pgwire.PopDelivered || res.LeaseExpires.IsZero() {
		delete(gm.leased, c.p) // the reservation, if any: no lease holds it (auto-ack keeps none)
	}
}

// Reserve marks candidate c as taken by a claim in progress here, for at
// most leaseHint, so that the group's concurrent pops choose other
// partitions instead of racing for one row (the loser's claim waits for
// the winner's, then matches nothing: a statement spent, and its hot-tail
// cursor forgotten). False when a lease or another claim here holds it
// already, and the pop passes it over. Every reserved candidate gets an
// Outcome, which replaces the reservation.
func (m *Marks) Reserve(tenant tenancy.TenantID, queue, group string, c Candidate) bool {
	if c.p == nil { // not one of Candidates'
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queues[queueRef{tenant, queue}]
	if q == nil {
		return true // dropped since it was listed: the claim finds what is there
	}
	gm := q.group(group)
	now := time.Now()
	if until, ok := gm.leased[c.p]; ok && now.Before(until) {
		return false
	}
	gm.leased[c.p] = now.Add(leaseHint)
	return true
}

// Drop forgets a deleted queue (here or by a peer): its partitions' ids
// are of partitions that no longer exist. A load in progress fills a list
// nobody keeps.
func (m *Marks) Drop(tenant tenancy.TenantID, queue string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.queues[queueRef{tenant, queue}]; ok {
		delete(m.queues, queueRef{tenant, queue})
		m.n.Add(-1)
	}
}

// Released records that a lease on a partition ended; again: its messages
// after the cursor are deliverable again (a failed or retried ack, a seek).
// The caller announces the partition (readside.Reads.Announce): it may hold
// more than the lease delivered, or what it handed back.
func (m *Marks) Released(tenant tenancy.TenantID, queue, partition, group string, again bool) {
	m.tracked(tenant, queue, func(q *queueMarks) {
		p := q.parts[partition]
		if p == nil {
			return
		}
		gm := q.group(group)
		delete(gm.leased, p)
		if again {
			delete(gm.drained, p)
		}
	})
}
