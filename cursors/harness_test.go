package cursors

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

// fakeClock is a clock tests move by hand. mu guards now and timers.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []fakeTimer
}

type fakeTimer struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) At(t time.Time) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if !t.After(c.now) {
		ch <- c.now
		return ch
	}
	c.timers = append(c.timers, fakeTimer{t, ch})
	return ch
}

// Advance moves the clock and fires the timers it passed.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	keep := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			t.ch <- c.now
		} else {
			keep = append(keep, t)
		}
	}
	c.timers = keep
}

// published is one message the fake Deliverer was asked to send.
type published struct {
	tenant         tenancy.TenantID
	subject, reply string
	header, body   []byte
}

func (p published) String() string {
	return fmt.Sprintf("%s reply %s header %q body %q", p.subject, p.reply, p.header, p.body)
}

func (p published) status() string {
	h := string(p.header)
	if !strings.HasPrefix(h, "NATS/1.0 ") || len(p.body) > 0 {
		return ""
	}
	line, _, _ := strings.Cut(h, "\r\n")
	return strings.TrimPrefix(line, "NATS/1.0 ")
}

func (p published) headerValue(key string) string {
	for _, line := range strings.Split(string(p.header), "\r\n") {
		if k, v, ok := strings.Cut(line, ": "); ok && k == key {
			return v
		}
	}
	return ""
}

// fakeDeliverer records what is published; mu guards all its fields.
type fakeDeliverer struct {
	mu        sync.Mutex
	sent      []published
	uninterst map[string]bool
	lost      func(tenancy.TenantID, string)
	holds     int // Hold calls not released
	holdsMade int // Hold calls in all
}

func (d *fakeDeliverer) Hold(tenancy.TenantID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.holds++
	d.holdsMade++
}

func (d *fakeDeliverer) Release(tenancy.TenantID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.holds--
}

func (d *fakeDeliverer) Publish(tenant tenancy.TenantID, subject, reply string, header, body []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.sent = append(d.sent, published{tenant, subject, reply, slices.Clone(header), slices.Clone(body)})
	return nil
}

func (d *fakeDeliverer) Interested(_ tenancy.TenantID, subject string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.uninterst[subject]
}

func (d *fakeDeliverer) OnInterestLost(fn func(tenancy.TenantID, string)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lost = fn
}

// loseInterest makes the hub forget subject, as an LS- would.
func (d *fakeDeliverer) loseInterest(subject string) {
	d.mu.Lock()
	if d.uninterst == nil {
		d.uninterst = map[string]bool{}
	}
	d.uninterst[subject] = true
	fn := d.lost
	d.mu.Unlock()
	fn(tenant, subject)
}

// to is what went to subject, in order.
func (d *fakeDeliverer) to(subject string) []published {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []published
	for _, p := range d.sent {
		if p.subject == subject {
			out = append(out, p)
		}
	}
	return out
}

// msgsTo are the user messages (not statuses) that went to subject.
func (d *fakeDeliverer) msgsTo(subject string) []published {
	var out []published
	for _, p := range d.to(subject) {
		if p.status() == "" {
			out = append(out, p)
		}
	}
	return out
}

// fakeStore keeps consumers, partitions and messages in memory. mu guards
// every field; gate, when set, holds CommitAcks until it is closed.
type fakeStore struct {
	mu        sync.Mutex
	nextID    int64
	consumers map[string]StoredConsumer
	parts     []PartitionState // id, name, first, last of each partition
	msgs      map[int64][]StoredMsg
	acks      map[[2]int64]AckUpdate // (consumer, partition): the last stored state
	commits   [][]AckUpdate
	reads     int
	gate      chan struct{}
	entered   chan struct{} // gets a value when a CommitAcks starts
	readOf    map[int64]int // ranges read, by partition id
	partLoads int           // ConsumerPartitions calls
}

func newFakeStore() *fakeStore {
	return &fakeStore{consumers: map[string]StoredConsumer{}, msgs: map[int64][]StoredMsg{}, acks: map[[2]int64]AckUpdate{}, readOf: map[int64]int{}, entered: make(chan struct{}, 64)}
}

func (s *fakeStore) PutConsumer(_ context.Context, c StoredConsumer, action string) (StoredConsumer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.consumers[c.Name]
	switch {
	case action == "create" && ok:
		return StoredConsumer{}, ErrConsumerExists
	case action == "update" && !ok:
		return StoredConsumer{}, ErrConsumerMissing
	}
	if ok {
		c.ID, c.CreatedAt = old.ID, old.CreatedAt
	} else {
		s.nextID++
		c.ID, c.CreatedAt = s.nextID, time.Unix(1, 0)
	}
	s.consumers[c.Name] = c
	return c, nil
}

func (s *fakeStore) GetConsumer(_ context.Context, _ tenancy.TenantID, _, name string) (StoredConsumer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.consumers[name]
	if !ok {
		return StoredConsumer{}, ErrConsumerMissing
	}
	return c, nil
}

func (s *fakeStore) ListConsumers(context.Context, tenancy.TenantID, string) ([]StoredConsumer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []StoredConsumer
	for _, c := range s.consumers {
		out = append(out, c)
	}
	return out, nil
}

func (s *fakeStore) DeleteConsumer(_ context.Context, _ tenancy.TenantID, _, name string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.consumers[name]
	delete(s.consumers, name)
	return ok, nil
}

func (s *fakeStore) TouchConsumers(context.Context, []int64) error { return nil }

// IdleConsumers answers as the Store's does, against the wall clock (the
// fake keeps each consumer's LastActiveAt as put).
func (s *fakeStore) IdleConsumers(_ context.Context, grace time.Duration, key string, limit int) ([]StoredConsumer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []StoredConsumer
	for _, c := range s.consumers {
		var conf map[string]any
		if err := json.Unmarshal(c.Config, &conf); err != nil {
			return nil, err
		}
		ns, _ := conf[key].(float64)
		if (c.Durable && ns <= 0) || !c.LastActiveAt.Add(time.Duration(max(ns, 0))+grace).Before(time.Now()) {
			continue
		}
		if len(out) < limit {
			out = append(out, c)
		}
	}
	return out, nil
}

func (s *fakeStore) ConsumerPartitions(_ context.Context, id int64) ([]PartitionState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.partLoads++
	out := make([]PartitionState, 0, len(s.parts))
	for _, p := range s.parts {
		ps := p
		if ms := s.msgs[p.ID]; len(ms) > 0 {
			ps.First, ps.Last = ms[0].Offset, ms[len(ms)-1].Offset
		}
		if u, ok := s.acks[[2]int64{id, p.ID}]; ok {
			ps.Floor, ps.Acked, ps.Deliveries, ps.Delivered, ps.Seeded = u.Floor, u.Acked, u.Deliveries, max(u.Delivered, u.Floor), true
		}
		out = append(out, ps)
	}
	return out, nil
}

func (s *fakeStore) ReadAfter(_ context.Context, ranges []ReadRange) ([]ReadRun, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	for _, r := range ranges {
		s.readOf[r.PartitionID]++
	}
	out := make([]ReadRun, len(ranges))
	for i, r := range ranges {
		out[i] = ReadRun{PartitionID: r.PartitionID, Next: r.After}
		for _, m := range s.msgs[r.PartitionID] {
			if m.Offset > r.After && len(out[i].Messages) < r.Limit {
				out[i].Messages = append(out[i].Messages, m)
				out[i].Next = m.Offset
			}
		}
	}
	return out, nil
}

func (s *fakeStore) PartitionStats(context.Context, tenancy.TenantID, string) (pgwire.QueueInfo, []pgwire.PartitionStat, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []pgwire.PartitionStat
	for _, p := range s.parts {
		st := pgwire.PartitionStat{ID: p.ID, Name: p.Name}
		if ms := s.msgs[p.ID]; len(ms) > 0 {
			st.Last, st.Counts.Total = ms[len(ms)-1].Offset, int64(len(ms))
			st.Oldest, st.Newest = ms[0].CreatedAt, ms[len(ms)-1].CreatedAt
		}
		out = append(out, st)
	}
	return pgwire.QueueInfo{Name: "ORDERS"}, out, true, nil
}

func (s *fakeStore) CommitAcks(ctx context.Context, ups []AckUpdate) error {
	s.entered <- struct{}{}
	s.mu.Lock()
	gate := s.gate
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commits = append(s.commits, ups)
	for _, u := range ups {
		k := [2]int64{u.ConsumerID, u.PartitionID}
		old := s.acks[k]
		u.Dead = append(old.Dead, u.Dead...)
		u.Delivered = max(u.Delivered, old.Delivered) // the stored mark only rises
		s.acks[k] = u
	}
	return nil
}

// ackState is the stored ack state of a consumer on a partition.
func (s *fakeStore) ackState(consumer string, pid int64) AckUpdate {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acks[[2]int64{s.consumers[consumer].ID, pid}]
}

func (s *fakeStore) nReadsOf(pid int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readOf[pid]
}

func (s *fakeStore) nCommits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.commits)
}

func (s *fakeStore) nReads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// harness is an engine over fakes with the stream ORDERS (orders.>) and
// the partitions eu (id 1) and us (id 2).
type harness struct {
	t     *testing.T
	e     *JSEngine
	store *fakeStore
	out   *fakeDeliverer
	clock *fakeClock
}

var tenant tenancy.TenantID

func newHarness(t *testing.T, mut func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, store: newFakeStore(), out: &fakeDeliverer{}, clock: newFakeClock()}
	h.store.parts = []PartitionState{{ID: 1, Name: "eu"}, {ID: 2, Name: "us"}}
	cfg := Config{Store: h.store, Deliverer: h.out, Clock: h.clock, Streams: map[string][]string{"ORDERS": {"orders.>"}}}
	if mut != nil {
		mut(&cfg)
	}
	e, err := NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.e = testkit.Started(t, e, nil)
	return h
}

// add stores n messages on partition pid, as another bridge's commits:
// only a read finds them. Their subject is rebuilt: orders.<partition>.
func (h *harness) add(pid int64, n int) {
	h.store.mu.Lock()
	defer h.store.mu.Unlock()
	name := h.store.parts[pid-1].Name
	for i := 0; i < n; i++ {
		off := int64(len(h.store.msgs[pid]) + 1)
		f := segment.Frame{TransactionID: fmt.Sprint("tx-", off), Payload: fmt.Appendf(nil, "%s-%d", name, off)}
		h.store.msgs[pid] = append(h.store.msgs[pid], StoredMsg{Offset: off, Frame: f, CreatedAt: h.clock.Now()})
	}
}

// commit stores n messages on partition pid and hands them to the
// engine's commit hook, as this bridge's fusion does.
func (h *harness) commit(pid int64, n int) {
	h.store.mu.Lock()
	name := h.store.parts[pid-1].Name
	base := int64(len(h.store.msgs[pid]) + 1)
	frames := make([]segment.Frame, n)
	for i := range frames {
		off := base + int64(i)
		frames[i] = segment.Frame{TransactionID: fmt.Sprint("tx-", off), Payload: fmt.Appendf(nil, "%s-%d", name, off)}
		h.store.msgs[pid] = append(h.store.msgs[pid], StoredMsg{Offset: off, Frame: frames[i], CreatedAt: h.clock.Now()})
	}
	h.store.mu.Unlock()
	w := segment.Write{Tenant: tenant, Queue: "ORDERS", Partition: name, Count: int32(n), Blob: segment.Pack(nil, frames)}
	r := segment.Result{PartitionID: pid, Status: segment.Queued, BaseOffset: base, CreatedAt: h.clock.Now()}
	h.e.Committed([]segment.Write{w}, []segment.Result{r})
}

func (h *harness) create(cfg ConsumerConfig) {
	h.t.Helper()
	if _, err := h.e.CreateConsumer(context.Background(), tenant, "ORDERS", cfg, ""); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) pull(name string, req PullRequest, inbox string) {
	h.t.Helper()
	if err := h.e.Pull(tenant, "ORDERS", name, req, inbox); err != nil {
		h.t.Fatal(err)
	}
}

// settle waits for a whole pass of the consumer's goroutine after
// everything the test did so far.
func (h *harness) settle(name string) {
	h.t.Helper()
	var c *consumer
	testkit.WaitFor(h.t, "consumer "+name+" live", 10*time.Second, func() bool {
		h.e.mu.Lock()
		defer h.e.mu.Unlock()
		c = h.e.live[consumerKey{tenant, "ORDERS", name}]
		return c != nil
	})
	ch := make(chan struct{})
	select {
	case c.settle <- ch:
	case <-time.After(10 * time.Second):
		h.t.Fatal("consumer goroutine did not take the settle request")
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		h.t.Fatal("consumer goroutine did not finish a pass")
	}
}

// waitMsgs waits until inbox got n user messages, and returns them.
func (h *harness) waitMsgs(inbox string, n int) []published {
	h.t.Helper()
	testkit.WaitFor(h.t, fmt.Sprintf("%d messages to %s", n, inbox), 10*time.Second, func() bool { return len(h.out.msgsTo(inbox)) >= n })
	return h.out.msgsTo(inbox)
}

// waitStatus waits for a status message to inbox starting with prefix.
func (h *harness) waitStatus(inbox, prefix string) published {
	h.t.Helper()
	var got published
	testkit.WaitFor(h.t, fmt.Sprintf("status %q to %s", prefix, inbox), 10*time.Second, func() bool {
		for _, p := range h.out.to(inbox) {
			if strings.HasPrefix(p.status(), prefix) {
				got = p
				return true
			}
		}
		return false
	})
	return got
}

// ackRef parses a delivery's reply back into the ack it names.
func ackRef(t *testing.T, p published) AckRef {
	t.Helper()
	subj, _, _ := strings.Cut(p.reply, "@")
	tok := strings.Split(subj, ".")
	if len(tok) != 12 || tok[0] != "$JS" || tok[1] != "ACK" || tok[2] != "_" {
		t.Fatalf("ack subject %q is not $JS.ACK._ with 12 tokens", subj)
	}
	var r AckRef
	fmt.Sscan(tok[3], &r.PartitionID)
	r.Stream, r.Consumer = tok[4], tok[5]
	fmt.Sscan(tok[6], &r.Delivered)
	fmt.Sscan(tok[7], &r.Offset)
	fmt.Sscan(tok[8], &r.ConsumerSeq)
	fmt.Sscan(tok[11], &r.Epoch)
	return r
}

func (h *harness) ack(p published, kind AckKind, delay time.Duration, reply string) {
	h.e.Ack(tenant, ackRef(h.t, p), kind, delay, "", reply)
}
