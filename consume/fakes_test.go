package consume

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/cursors"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/readside"
	"github.com/queenbridge/queenbridge/segment"
)

// The unit tests are inside the package: claim rounds and ack grouping
// decide which database calls are made, in which order and with which
// bounds, and that is visible only to a Store and Marks of their own.
// These fakes record what they are asked and answer what a test scripted.

// fakeStore answers pops by partition (PartitionID when the request has
// one, else the name) and acks by partition id.
type fakeStore struct {
	// mu guards every field: a Consumer calls the store from the request's
	// goroutine, the claim rounds' and the ack fuser's statements at once,
	// and the test reads what was recorded meanwhile.
	mu       sync.Mutex
	pops     []pgwire.PopRequest
	tailPops [][]int64 // each hot tail claim statement's partition ids
	tailErr  error     // the hot tail claim statement's failure, if set
	acks     []ackCall
	popByID  map[int64]func(pgwire.PopRequest) (pgwire.PopResult, error)
	popByKey map[string]func(pgwire.PopRequest) (pgwire.PopResult, error)
	ack      func(pid int64, items []pgwire.AckItem) (pgwire.AckResult, error)
	wholes   [][]pgwire.WholeAck
	whole    func(acks []pgwire.WholeAck) ([]pgwire.WholeAckResult, error) // nil: none applies
	extend   func(lease [16]byte, seconds int) (time.Time, bool, error)
	dead     func() ([]pgwire.DeadLetter, int64, error)
	groups   func(seek *pgwire.SeekRequest) ([]pgwire.GroupPartition, error) // seeks and deletes (seek nil)
}

type ackCall struct {
	pid   int64
	group string
	lease *[16]byte
	items []pgwire.AckItem
}

func newFakeStore() *fakeStore {
	return &fakeStore{popByID: map[int64]func(pgwire.PopRequest) (pgwire.PopResult, error){},
		popByKey: map[string]func(pgwire.PopRequest) (pgwire.PopResult, error){}}
}

func (s *fakeStore) Pop(_ context.Context, req pgwire.PopRequest) (pgwire.PopResult, error) {
	s.mu.Lock()
	s.pops = append(s.pops, req)
	fn := s.popByKey[req.Partition]
	if req.PartitionID > 0 {
		fn = s.popByID[req.PartitionID]
	}
	s.mu.Unlock()
	if fn == nil {
		return pgwire.PopResult{Status: pgwire.PopMissing}, nil
	}
	return fn(req)
}

func (s *fakeStore) Ack(_ context.Context, _ tenancy.TenantID, pid int64, group string, lease *[16]byte, items []pgwire.AckItem) (pgwire.AckResult, error) {
	s.mu.Lock()
	s.acks = append(s.acks, ackCall{pid: pid, group: group, lease: lease, items: items})
	fn := s.ack
	s.mu.Unlock()
	if fn == nil {
		return pgwire.AckResult{Errs: make([]string, len(items)), DLQ: make([]bool, len(items)), Queue: "q", Partition: fmt.Sprint("p", pid)}, nil
	}
	return fn(pid, items)
}

func (s *fakeStore) AckWhole(_ context.Context, acks []pgwire.WholeAck) ([]pgwire.WholeAckResult, error) {
	s.mu.Lock()
	s.wholes = append(s.wholes, acks)
	fn := s.whole
	s.mu.Unlock()
	if fn == nil {
		return make([]pgwire.WholeAckResult, len(acks)), nil
	}
	return fn(acks)
}

// PopTail refuses every claim from the hot tail (Status ""), as the
// database does when the cursor moved or retention removed what was taken;
// or fails with tailErr.
func (s *fakeStore) PopTail(_ context.Context, claims []pgwire.TailClaim) ([]pgwire.PopResult, error) {
	ids := make([]int64, len(claims))
	for i, c := range claims {
		ids[i] = c.PartitionID
	}
	s.mu.Lock()
	s.tailPops = append(s.tailPops, ids)
	err := s.tailErr
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return make([]pgwire.PopResult, len(claims)), nil
}

func (s *fakeStore) ExtendLease(_ context.Context, _ tenancy.TenantID, lease [16]byte, seconds int) (time.Time, bool, error) {
	return s.extend(lease, seconds)
}

func (s *fakeStore) UnclaimAutoAck(context.Context, int64, string, int64, int64) (bool, error) {
	return false, errors.New("fakeStore: no auto-ack claims to undo")
}

func (s *fakeStore) DeadLetters(context.Context, tenancy.TenantID, string, string, int, int) ([]pgwire.DeadLetter, int64, error) {
	return s.dead()
}

func (s *fakeStore) SeekGroup(_ context.Context, req pgwire.SeekRequest) ([]pgwire.GroupPartition, error) {
	return s.groups(&req)
}

func (s *fakeStore) DeleteGroup(context.Context, tenancy.TenantID, string, string, bool) ([]pgwire.GroupPartition, error) {
	return s.groups(nil)
}

func (s *fakeStore) Transaction(context.Context, pgwire.TxnRequest) (pgwire.TxnResult, error) {
	return pgwire.TxnResult{}, errors.New("fakeStore: no transactions")
}

func (s *fakeStore) popCalls() []pgwire.PopRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]pgwire.PopRequest(nil), s.pops...)
}

func (s *fakeStore) tailPopCalls() [][]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]int64(nil), s.tailPops...)
}

func (s *fakeStore) ackCalls() []ackCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ackCall(nil), s.acks...)
}

// delivers answers a claim with up to n messages (capped by the claim's
// batch) of partition id pid, each of payload size bytes.
func delivers(pid int64, name string, n, size int) func(pgwire.PopRequest) (pgwire.PopResult, error) {
	return func(req pgwire.PopRequest) (pgwire.PopResult, error) {
		k := min(n, req.Batch)
		res := pgwire.PopResult{Status: pgwire.PopDelivered, PartitionID: pid, Partition: name, To: int64(k), LeaseExpires: time.Now().Add(time.Minute)}
		for i := 0; i < k; i++ {
			res.Messages = append(res.Messages, message(int64(i+1), fmt.Sprintf("%s-%d", name, i+1), size))
		}
		return res, nil
	}
}

// answers answers a claim with nothing: status empty, leased, missing...
func answers(status string, pid int64, name string) func(pgwire.PopRequest) (pgwire.PopResult, error) {
	return func(pgwire.PopRequest) (pgwire.PopResult, error) {
		return pgwire.PopResult{Status: status, PartitionID: pid, Partition: name}, nil
	}
}

func fails(err error) func(pgwire.PopRequest) (pgwire.PopResult, error) {
	return func(pgwire.PopRequest) (pgwire.PopResult, error) { return pgwire.PopResult{}, err }
}

// message is a stored message whose JSON payload is size bytes long.
func message(off int64, txid string, size int) pgwire.Message {
	payload := []byte(`""`)
	if size > 2 {
		payload = make([]byte, size)
		payload[0], payload[size-1] = '"', '"'
		for i := 1; i < size-1; i++ {
			payload[i] = 'x'
		}
	}
	return pgwire.Message{Offset: off, Frame: segment.Frame{ID: uuid.Must(uuid.NewV7()), TransactionID: txid, Payload: payload},
		CreatedAt: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// fakeMarks lists candidates and records what it hears.
type fakeMarks struct {
	// mu guards every field: concurrent pops ask for candidates, reserve
	// and report outcomes from their own goroutines.
	mu        sync.Mutex
	cands     []cursors.Candidate
	candErr   error
	candCalls int
	outcomes  []outcome
	released  []release
	// held names the partitions another pop is claiming (Reserve refuses
	// them); reserved counts the reservations granted, and reservedNames
	// names them in order.
	held          map[string]bool
	reserved      int
	reservedNames []string
}

type outcome struct {
	cand cursors.Candidate
	res  pgwire.PopResult
}

type release struct {
	queue, partition, group string
	again                   bool
}

func (m *fakeMarks) Candidates(context.Context, tenancy.TenantID, string, string) ([]cursors.Candidate, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.candCalls++
	return append([]cursors.Candidate(nil), m.cands...), m.candErr
}

func (m *fakeMarks) Outcome(_ tenancy.TenantID, _, _ string, c cursors.Candidate, res pgwire.PopResult) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.outcomes = append(m.outcomes, outcome{c, res})
}

func (m *fakeMarks) Reserve(_ tenancy.TenantID, _, _ string, c cursors.Candidate) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.held[c.Name] {
		return false
	}
	m.reserved++
	m.reservedNames = append(m.reservedNames, c.Name)
	return true
}

func (m *fakeMarks) Released(_ tenancy.TenantID, queue, partition, group string, again bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.released = append(m.released, release{queue, partition, group, again})
}

// fakePayloads wraps each payload in an object, so that a test sees that
// an answer went through Plain; a payload "\"secret\"" cannot be read.
type fakePayloads struct{}

var errNoKey = errors.New("no key for this queue")

func (fakePayloads) Plain(_ tenancy.TenantID, _, _ string, _ uint8, stored []byte) ([]byte, error) {
	if string(stored) == `"secret"` {
		return nil, errNoKey
	}
	return append(append([]byte(`{"plain":`), stored...), '}'), nil
}

// Sealed: the fake's queues are plaintext, whatever their payloads.
func (fakePayloads) Sealed(context.Context, tenancy.TenantID, string) (bool, error) {
	return false, nil
}

// fakeObserver records what it hears.
type fakeObserver struct {
	// mu guards both lists: pops and acks report from their own
	// goroutines (the ack fuser's among them).
	mu     sync.Mutex
	popped []int
	acked  []acked
}

type acked struct {
	status   string
	ok, dead bool
}

func (o *fakeObserver) Popped(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.popped = append(o.popped, n)
}

func (o *fakeObserver) Transaction(string) {}

func (o *fakeObserver) Acked(status string, ok, dead bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.acked = append(o.acked, acked{status, ok, dead})
}

// rig is a Consumer on fakes.
type rig struct {
	c     *Consumer
	store *fakeStore
	marks *fakeMarks
	obs   *fakeObserver
	// maint and popMaint are the switches Maintenance and PopMaintenance
	// read: atomic, since the test flips them while a Consumer it has used
	// may still be reading them on another goroutine (a parked pop).
	maint, popMaint atomic.Bool
}

// newRig builds a Consumer through New. Its Reads is required but only
// parks pops that wait; it is never started, and its DB (never opened) is
// never asked anything, since these pops do not wait and Marks is a fake.
func newRig(t *testing.T) *rig {
	t.Helper()
	return newRigWithTail(t, nil)
}

// newRigWithTail is newRig whose Consumer has tail as its hot tail (nil:
// none); its claims from memory go to the fake store's PopTail.
func newRigWithTail(t *testing.T, tail *cursors.Tail) *rig {
	t.Helper()
	reads, err := readside.New(readside.Config{DB: new(pgwire.DB)})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{store: newFakeStore(), marks: &fakeMarks{}, obs: &fakeObserver{}}
	r.c, err = New(Config{DB: r.store, Reads: reads, Marks: r.marks, Payloads: fakePayloads{}, Observer: r.obs,
		Maintenance: r.maint.Load, PopMaintenance: r.popMaint.Load, Tail: tail})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var tenant = tenancy.TenantID{0xab, 1}

func (s *fakeStore) RequeueCandidates(context.Context, pgwire.RequeueSelect) ([]pgwire.DeadLetter, bool, bool, error) {
	return nil, false, false, errors.New("fakeStore: no requeues")
}

func (s *fakeStore) Requeue(context.Context, pgwire.RequeueRequest) ([]segment.Result, error) {
	return nil, errors.New("fakeStore: no requeues")
}
