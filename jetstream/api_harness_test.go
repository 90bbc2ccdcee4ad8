package jetstream

import (
	"context"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/auth"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// testClock is the time every answer and every fake consumer carries, so
// that the answers are byte-for-byte the same on every run.
var testClock = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// fakeEngine keeps consumers per tenant and stream in memory and records
// the pulls and acks it is handed. The mutex guards everything: the API
// calls it from its workers and from the subscriptions' goroutines.
type fakeEngine struct {
	mu        sync.Mutex
	consumers map[tenancy.TenantID]map[string]map[string]ConsumerInfo // tenant, stream, name
	state     StreamState
	pulls     []fakePull
	acks      []fakeAck
	failNext  error // the next call's error, once
	// hold, when set, is called by Consumers outside the lock before it
	// answers: a test's way to keep a request in flight.
	hold func(ctx context.Context)
}

type fakePull struct {
	tenant       tenancy.TenantID
	stream, name string
	req          PullRequest
	inbox        string
}

type fakeAck struct {
	tenant        tenancy.TenantID
	ref           AckRef
	kind          AckKind
	delay         time.Duration
	reason, reply string
}

func newFakeEngine() *fakeEngine {
	return &fakeEngine{
		consumers: map[tenancy.TenantID]map[string]map[string]ConsumerInfo{},
		state: StreamState{Created: testClock.Add(-time.Hour), Messages: 42, Bytes: 4200, FirstSeq: 1,
			FirstTime: testClock.Add(-time.Hour), LastSeq: 30, LastTime: testClock.Add(-time.Minute)},
	}
}

func (e *fakeEngine) takeFail() error {
	err := e.failNext
	e.failNext = nil
	return err
}

func (e *fakeEngine) CreateConsumer(_ context.Context, tenant tenancy.TenantID, stream string, cfg ConsumerConfig, action string) (ConsumerInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.takeFail(); err != nil {
		return ConsumerInfo{}, err
	}
	if e.consumers[tenant] == nil {
		e.consumers[tenant] = map[string]map[string]ConsumerInfo{}
	}
	byName := e.consumers[tenant][stream]
	if byName == nil {
		byName = map[string]ConsumerInfo{}
		e.consumers[tenant][stream] = byName
	}
	old, exists := byName[cfg.Name]
	switch {
	case action == "create" && exists && !sameConfig(old.Config, cfg):
		return ConsumerInfo{}, ErrConsumerExists
	case action == "update" && !exists:
		return ConsumerInfo{}, ErrConsumerMissing
	}
	ci := ConsumerInfo{Stream: stream, Name: cfg.Name, Created: testClock, Config: cfg, NumPending: 42, TimeStamp: testClock}
	byName[cfg.Name] = ci
	return ci, nil
}

func sameConfig(a, b ConsumerConfig) bool {
	return a.Durable == b.Durable && a.AckPolicy == b.AckPolicy && a.DeliverPolicy == b.DeliverPolicy &&
		a.FilterSubject == b.FilterSubject && slices.Equal(a.FilterSubjects, b.FilterSubjects)
}

func (e *fakeEngine) ConsumerInfo(_ context.Context, tenant tenancy.TenantID, stream, name string) (ConsumerInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ci, ok := e.consumers[tenant][stream][name]
	if !ok {
		return ConsumerInfo{}, ErrConsumerNotFound
	}
	return ci, nil
}

func (e *fakeEngine) DeleteConsumer(_ context.Context, tenant tenancy.TenantID, stream, name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.consumers[tenant][stream][name]; !ok {
		return ErrConsumerNotFound
	}
	delete(e.consumers[tenant][stream], name)
	return nil
}

func (e *fakeEngine) Consumers(ctx context.Context, tenant tenancy.TenantID, stream string) ([]ConsumerInfo, error) {
	e.mu.Lock()
	hold := e.hold
	e.mu.Unlock()
	if hold != nil {
		hold(ctx)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.takeFail(); err != nil {
		return nil, err
	}
	var out []ConsumerInfo
	for _, ci := range e.consumers[tenant][stream] {
		out = append(out, ci)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (e *fakeEngine) StreamState(_ context.Context, tenant tenancy.TenantID, stream string) (StreamState, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.state
	st.Consumers = len(e.consumers[tenant][stream])
	return st, nil
}

func (e *fakeEngine) Pull(tenant tenancy.TenantID, stream, name string, req PullRequest, inbox string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.consumers[tenant][stream][name]; !ok {
		return ErrConsumerNotFound
	}
	e.pulls = append(e.pulls, fakePull{tenant, stream, name, req, inbox})
	return nil
}

func (e *fakeEngine) Ack(tenant tenancy.TenantID, ref AckRef, kind AckKind, delay time.Duration, reason, reply string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.acks = append(e.acks, fakeAck{tenant, ref, kind, delay, reason, reply})
}

func (e *fakeEngine) recorded() ([]fakePull, []fakeAck) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.pulls), slices.Clone(e.acks)
}

// fakeStatus records the status messages the API sends (the leaf
// connection in the bridge). The mutex guards the list: the API sends from
// its subscriptions' goroutines, the test reads.
type fakeStatus struct {
	mu   sync.Mutex
	sent []sentStatus
}

type sentStatus struct {
	tenant          tenancy.TenantID
	subject, header string
}

func (s *fakeStatus) Publish(tenant tenancy.TenantID, subject, _ string, header, _ []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, sentStatus{tenant, subject, string(header)})
	return nil
}

// tenants are the tenants whose connections the statuses to subject went
// over.
func (s *fakeStatus) tenants(subject string) []tenancy.TenantID {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []tenancy.TenantID
	for _, m := range s.sent {
		if m.subject == subject {
			out = append(out, m.tenant)
		}
	}
	return out
}

func (s *fakeStatus) to(subject string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.sent {
		if m.subject == subject {
			out = append(out, m.header)
		}
	}
	return out
}

// harness is the API on the test binary's NATS with a fake engine, each
// test on its own domain so that tests never answer each other's requests.
type harness struct {
	api    *API
	engine *fakeEngine
	status *fakeStatus
	nc     *nats.Conn // the clients' connection
	server *nats.Conn // the API's
	prefix string     // "$JS.<domain>.API."
	// stopped: the test stopped the API itself and checked Stop's error.
	stopped bool
}

var testStreams = []Stream{
	{Name: "ORDERS", Filters: []string{"orders.>"}},
	{Name: "AUDIT", Filters: []string{"audit.*.events"}},
}

func newHarness(t *testing.T, accounts *auth.Accounts) *harness {
	t.Helper()
	return newHarnessWith(t, accounts, func(*APIConfig) {})
}

// newHarnessWith is newHarness with the API's config changed by edit
// before NewAPI.
func newHarnessWith(t *testing.T, accounts *auth.Accounts, edit func(*APIConfig)) *harness {
	t.Helper()
	url := testenv.NATSURL(t)
	server, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	client, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	h := &harness{engine: newFakeEngine(), status: &fakeStatus{}, nc: client, server: server}
	domain := "T" + nats.NewInbox()[len("_INBOX."):]
	cfg := APIConfig{NATS: server, Streams: testStreams, Engine: h.engine, Status: h.status,
		Accounts: accounts, Domain: domain, Now: func() time.Time { return testClock }}
	edit(&cfg)
	h.api, err = NewAPI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.prefix = "$JS." + domain + ".API."
	if err := h.api.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := server.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.api.Stop(ctx); err != nil && !h.stopped {
			t.Error(err)
		}
	})
	return h
}

// request sends body to the API subject <prefix><api> and returns the
// answer's body.
func (h *harness) request(t *testing.T, api, body string) []byte {
	t.Helper()
	m, err := h.nc.Request(h.prefix+api, []byte(body), 10*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", api, err)
	}
	return m.Data
}
