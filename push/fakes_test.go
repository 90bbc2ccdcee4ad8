package push_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/durability"
	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/ownership"
	"github.com/queenbridge/queenbridge/push"
	"github.com/queenbridge/queenbridge/queues"
	"github.com/queenbridge/queenbridge/readside"
	"github.com/queenbridge/queenbridge/segment"
)

// The push call beside fakes of the rooms it uses. Each fake's settings
// are written before the call starts and only read after; what a fake
// records is written from the call's goroutines (the caller's, a feeder,
// the goroutines that answer verdicts, the one that spools) and read by
// the test, so a lock guards it.

var errTimeout = errors.New("statement timeout")

// originalID is the stored message a Duplicate verdict names.
var originalID = [16]byte{0xd0, 0x0d}

// fakeFusion answers each submission's frames: Error for a failing
// partition, Duplicate for a stored transactionId, else Queued at the
// partition's next offset. It answers on a goroutine of its own, as
// fusion does, or, with hold set, hands the submission to the test, which
// answers it (answer).
type fakeFusion struct {
	failing  map[string]bool // partitions whose bundle fails
	refusing map[string]bool // partitions Submit refuses
	stored   map[string]bool // transactionIds stored already
	hold     chan fusion.Submission

	mu          sync.Mutex // guards the fields below: Submit runs on the call's goroutines, answers on others
	subs        []fusion.Submission
	offsets     map[[2]string]int64
	inFlight    int // submitted, not answered
	maxInFlight int
	answering   sync.WaitGroup
}

func (f *fakeFusion) Submit(_ context.Context, s fusion.Submission) error {
	if f.refusing[s.Partition] {
		return errors.New("fusion is stopping")
	}
	f.mu.Lock()
	f.subs = append(f.subs, s)
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	f.mu.Unlock()
	if f.hold != nil {
		f.hold <- s
		return nil
	}
	f.answering.Add(1)
	go func() {
		defer f.answering.Done()
		f.answer(s)
	}()
	return nil
}

// answer settles s as the fake's settings say.
func (f *fakeFusion) answer(s fusion.Submission) {
	vs := make([]fusion.Verdict, len(s.Frames))
	f.mu.Lock()
	if f.offsets == nil {
		f.offsets = map[[2]string]int64{}
	}
	for i, fr := range s.Frames {
		k := [2]string{s.Queue, s.Partition}
		switch {
		case f.failing[s.Partition]:
			vs[i] = fusion.Verdict{Status: fusion.Error, Err: errTimeout}
		case f.stored[fr.TransactionID]:
			vs[i] = fusion.Verdict{Status: fusion.Duplicate, Offset: 99, MessageID: originalID}
		default:
			vs[i] = fusion.Verdict{Status: fusion.Queued, PartitionID: 7, Offset: f.offsets[k], MessageID: fr.ID,
				CreatedAt: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
			f.offsets[k]++
		}
	}
	f.inFlight--
	f.mu.Unlock()
	s.Done(vs)
}

func (f *fakeFusion) submissions() []fusion.Submission {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.subs)
}

// fakeOwners owns every partition here but those in owner; a forward is
// answered (on a goroutine of its own, as the router's) with Queued
// verdicts from offset 1000, or refused.
type fakeOwners struct {
	owner  map[string]string // partition -> owning bridge
	refuse bool

	mu        sync.Mutex // guards forwarded: written by the call, read by the test
	forwarded []ownership.Group
	answering sync.WaitGroup
}

func (o *fakeOwners) Owner(_ tenancy.TenantID, _, partition string) string { return o.owner[partition] }

func (o *fakeOwners) ForwardAsync(_ string, _ tenancy.TenantID, groups []ownership.Group, done func([]ownership.Answer, error)) {
	o.mu.Lock()
	o.forwarded = append(o.forwarded, groups...)
	o.mu.Unlock()
	answers := make([]ownership.Answer, len(groups))
	for i, g := range groups {
		if o.refuse {
			answers[i].Refused = true
			continue
		}
		for j, fr := range g.Frames {
			answers[i].Verdicts = append(answers[i].Verdicts, fusion.Verdict{Status: fusion.Queued, Offset: 1000 + int64(j), MessageID: fr.ID})
		}
	}
	o.answering.Add(1)
	go func() {
		defer o.answering.Done()
		done(answers, nil)
	}()
}

func (o *fakeOwners) groups() []ownership.Group {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.forwarded)
}

// fakeSealer: queue "secret" is sealed (its payloads prefixed), queue
// "keyless" asks for encryption this bridge cannot give, others are plain.
type fakeSealer struct {
	mu      sync.Mutex // guards lookups: written by the call, read by the test
	lookups map[string]int
}

func (s *fakeSealer) EncryptionFor(_ context.Context, _ tenancy.TenantID, queue string) error {
	s.mu.Lock()
	if s.lookups == nil {
		s.lookups = map[string]int{}
	}
	s.lookups[queue]++
	s.mu.Unlock()
	switch queue {
	case "secret":
		return nil
	case "keyless":
		return errors.New(`queue "keyless" has encryption enabled but no key is configured`)
	}
	return queues.ErrPlain
}

func (s *fakeSealer) Seal(_ tenancy.TenantID, _, _ string, plain []byte) ([]byte, uint8) {
	return append([]byte("sealed:"), plain...), segment.FlagEncrypted
}

func (s *fakeSealer) lookupsOf(queue string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookups[queue]
}

// fakeKeeper is maintenance mode and the spool.
type fakeKeeper struct {
	maintenance bool
	noSpool     bool
	spoolErr    error

	mu      sync.Mutex // guards spooled: written by the goroutine that finishes a call
	spooled []durability.Failed
}

func (k *fakeKeeper) Maintenance() bool { return k.maintenance }
func (k *fakeKeeper) CanSpool() bool    { return !k.noSpool }

func (k *fakeKeeper) Spool(_ context.Context, _ tenancy.TenantID, failed []durability.Failed) error {
	if k.spoolErr != nil {
		return k.spoolErr
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, f := range failed {
		fr := *f.Frame
		k.spooled = append(k.spooled, durability.Failed{Queue: f.Queue, Partition: f.Partition, Frame: &fr})
	}
	return nil
}

func (k *fakeKeeper) records() []durability.Failed {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.spooled)
}

// fakeReads records what the calls announced.
type fakeReads struct {
	mu   sync.Mutex // guards keys: written by the goroutine that answers
	keys []readside.Key
}

func (r *fakeReads) AnnouncePushed(keys []readside.Key) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = append(r.keys, keys...)
}

func (r *fakeReads) announced() []readside.Key {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.keys)
}

// fakeObserver counts requests and items.
type fakeObserver struct {
	mu       sync.Mutex // guards the counts: written by the goroutine that answers
	requests map[string]int
	items    map[string]int
}

func (o *fakeObserver) Request(transport string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.requests == nil {
		o.requests = map[string]int{}
	}
	o.requests[transport]++
}

func (o *fakeObserver) Items(status string, n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.items == nil {
		o.items = map[string]int{}
	}
	o.items[status] += n
}

func (o *fakeObserver) Latency(string, time.Duration) {}

func (o *fakeObserver) counts() (requests, items map[string]int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.requests), maps.Clone(o.items)
}

// rig is a Pusher over fakes.
type rig struct {
	fu       *fakeFusion
	owners   *fakeOwners
	sealer   *fakeSealer
	keeper   *fakeKeeper
	reads    *fakeReads
	obs      *fakeObserver
	maxParts int
	stopping bool
	p        *push.Pusher
}

func newRig() *rig {
	return &rig{fu: &fakeFusion{}, owners: &fakeOwners{}, sealer: &fakeSealer{}, keeper: &fakeKeeper{}, reads: &fakeReads{}, obs: &fakeObserver{}}
}

// start makes the Pusher once the test has set the fakes up; the
// goroutines the fakes start end before the test does.
func (r *rig) start(t *testing.T) {
	t.Helper()
	stopping := r.stopping
	p, err := push.New(push.Config{Fusion: r.fu, Router: r.owners, Queues: r.sealer, Keeper: r.keeper, Reads: r.reads,
		Observer: r.obs, MaxPartitionsPerRequest: r.maxParts, Stopping: func() bool { return stopping }})
	if err != nil {
		t.Fatal(err)
	}
	r.p = p
	t.Cleanup(func() {
		r.fu.answering.Wait()
		r.owners.answering.Wait()
	})
}

// wroteNothing fails the test if anything was submitted, forwarded,
// spooled or announced.
func (r *rig) wroteNothing(t *testing.T) {
	t.Helper()
	if s, f, sp, a := len(r.fu.submissions()), len(r.owners.groups()), len(r.keeper.records()), len(r.reads.announced()); s+f+sp+a != 0 {
		t.Errorf("submitted %d, forwarded %d, spooled %d, announced %d", s, f, sp, a)
	}
}

// result is one item's answer as the wire carries it.
type result struct {
	Index         int
	Status        string
	MessageID     string
	TransactionID string
	Queue         string
	Partition     string
	Offset        int64
	Error         string
}

// push runs one push request and waits (bounded) for its answer.
func (r *rig) push(t *testing.T, items []jsonapi.Item) (int, []byte) {
	t.Helper()
	type answer struct {
		status int
		body   []byte
	}
	ch := make(chan answer, 1)
	r.p.Push(context.Background(), "http", tenancy.TenantID{1}, items, push.Answer{Body: func(s int, b []byte) { ch <- answer{s, b} }})
	select {
	case a := <-ch:
		return a.status, a.body
	case <-time.After(30 * time.Second):
		t.Fatal("no answer within 30s")
		return 0, nil
	}
}

func results(t *testing.T, body []byte) []result {
	t.Helper()
	var rs []result
	if err := json.Unmarshal(body, &rs); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return rs
}

func item(queue, partition, txid string) jsonapi.Item {
	return jsonapi.Item{Queue: queue, Partition: partition, TransactionID: txid, Payload: []byte(fmt.Sprintf(`{"tx":%q}`, txid))}
}
