package cursors

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/queenbridge/queenbridge/internal/every"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/rs/zerolog"
)

// Forwarder carries a request for a consumer that lives on another bridge
// to that bridge (owner: its id), whose engine takes it (Pull, Ack,
// ConsumerChanged) and answers the original reply itself.
type Forwarder interface {
	ForwardPull(owner string, tenant tenancy.TenantID, stream, name string, req PullRequest, inbox string) error
	ForwardAck(owner string, tenant tenancy.TenantID, ack AckRef, kind AckKind, delay time.Duration, reason, reply string) error
	ForwardChanged(owner string, tenant tenancy.TenantID, stream, name string) error
}

// Config configures the engine.
type Config struct {
	Store     Store     // required
	Deliverer Deliverer // required
	// Streams are the declared streams by name with their subject filters
	// (to rebuild a subject a frame does not keep). Required.
	Streams map[string][]string
	// Owner chooses the bridge a consumer lives on, by key (tenant,
	// stream, "$js."+consumer): self, or the owner's id. Default: always
	// self (one bridge).
	Owner func(tenant tenancy.TenantID, stream, key string) (self bool, id string)
	// Forwarder carries pulls, acks and definition changes to the owner
	// when it is another bridge. nil: Pull answers ErrNotOwner, and an ack
	// for another bridge is dropped (its message comes back after
	// ack_wait).
	Forwarder Forwarder
	// Plain turns a stored payload into the bytes published (decryption);
	// default: the stored payload. Base64 frames are decoded after it.
	Plain func(tenant tenancy.TenantID, queue, partition string, flags uint8, stored []byte) ([]byte, error)
	// Tail is the hot tail (nil: none): the commits of this bridge to
	// queues with JetStream consumers are kept there, and reads of them
	// are served from memory.
	Tail *Tail
	// FlushWindow is how long acks gather before one CommitAcks when a
	// double ack waits for its answer; 1 ms.
	FlushWindow time.Duration
	// LazyWindow is how long the rest gathers (plain acks, NAKs, delivery
	// marks: nothing waits for them); 100 ms. A bridge that dies loses at
	// most this much of them: those messages are delivered again.
	LazyWindow time.Duration
	// FlushMax is how many (consumer, partition) updates make a commit go
	// at once; 512.
	FlushMax int
	// ReadMax bounds the messages of one ReadAfter; 256.
	ReadMax int
	// BufferBytes bounds the messages a consumer keeps in memory (new
	// commits and what it read, until acknowledged); 8 MiB.
	BufferBytes int
	// CallTimeout bounds each Store call; 10 s.
	CallTimeout time.Duration
	// Poll is how often a consumer with parked requests looks for
	// messages other bridges committed when no announcement woke it; 1 s.
	Poll time.Duration
	// Clock is the time source of deadlines (ack wait, expiry, heartbeats,
	// inactivity); the wall clock by default (tests pass a fake one).
	Clock  Clock
	Logger zerolog.Logger
}

// Clock is the engine's time source.
type Clock interface {
	Now() time.Time
	// At fires once the clock reaches t (at once when it has).
	At(t time.Time) <-chan time.Time
}

type wallClock struct{}

func (wallClock) Now() time.Time                  { return time.Now() }
func (wallClock) At(t time.Time) <-chan time.Time { return time.After(time.Until(t)) }

func (c *Config) withDefaults() (Config, error) {
	out := *c
	if out.Store == nil || out.Deliverer == nil {
		return out, errors.New("cursors: Config.Store and Config.Deliverer are required")
	}
	if out.Owner == nil {
		out.Owner = func(tenancy.TenantID, string, string) (bool, string) { return true, "" }
	}
	if out.FlushWindow <= 0 {
		out.FlushWindow = time.Millisecond
	}
	if out.LazyWindow <= 0 {
		out.LazyWindow = 100 * time.Millisecond
	}
	out.LazyWindow = max(out.LazyWindow, out.FlushWindow)
	if out.FlushMax <= 0 {
		out.FlushMax = 512
	}
	if out.ReadMax <= 0 {
		out.ReadMax = 256
	}
	if out.BufferBytes <= 0 {
		out.BufferBytes = 8 << 20
	}
	if out.CallTimeout <= 0 {
		out.CallTimeout = 10 * time.Second
	}
	if out.Poll <= 0 {
		out.Poll = time.Second
	}
	if out.Clock == nil {
		out.Clock = wallClock{}
	}
	out.Logger = out.Logger.With().Str("target", "cursors").Logger()
	return out, nil
}

// JSEngine is the JetStream consumer engine of this bridge: the live state
// of the consumers it owns. It satisfies the jetstream package's Engine,
// the interface its API calls (declared there, where it is used).
//
// Goroutines: each live consumer has one (run) that reads the Store,
// delivers, and keeps its timers; the flusher stores acknowledgements;
// interestLoop drops requests whose inbox lost interest. State: mu guards
// the registries below only; each consumer's own mutex guards its state
// (consumer.mu). Lock order: consumer.mu, then JSEngine.mu, then
// flusher.mu (a consumer parks an inbox and marks acks while it holds its
// own); JSEngine.mu is never held while taking a consumer's, and no lock
// is held across a Store call.
type JSEngine struct {
	cfg   Config
	epoch string // this engine's load generation, the last token of every ack subject: formatted once, not per delivery

	mu      sync.Mutex
	live    map[consumerKey]*consumer
	byQueue map[queueKey][]*consumer
	byInbox map[inboxKey]map[*consumer]struct{}            // inboxes of parked requests
	loading map[consumerKey][]func(*consumer, error, bool) // loads under way, and what waits for each
	started bool
	stopped bool

	flush *flusher
	lost  lostQueue
	quit  chan struct{} // closed by Stop: the engine's own goroutines end

	ctx    context.Context // cancelled by Stop's end
	cancel context.CancelFunc
	bg     sync.WaitGroup

	stats counters
	nlive atomic.Int64 // len(live), for Listening without the lock
	own   ownCommits   // Committed's hand-overs, for Heard
}

// counters are the engine's Stats; atomics, read without a lock.
type counters struct {
	deliveries, redeliveries, acks, naks, terms, deadLetters atomic.Uint64
	flushes, flushErrors, flushedUpdates, heartbeats         atomic.Uint64
	expired, interestLost, noMessages, publishErrors         atomic.Uint64
	parked                                                   atomic.Int64
}

// Stats are the engine's counters for the metrics.
type Stats struct {
	Deliveries, Redeliveries, Acks, Naks, Terms, DeadLetters uint64
	AckFlushes, AckFlushErrors, AckUpdates, Heartbeats       uint64
	Expired, InterestLost, NoMessages                        uint64
	// PublishErrors: sends the Deliverer refused (not connected): a lost
	// delivery comes back after its ack wait.
	PublishErrors uint64
	Parked        int64 // pull requests parked now
	Consumers     int   // live here now
}

// Stats returns a snapshot.
func (e *JSEngine) Stats() Stats {
	e.mu.Lock()
	n := len(e.live)
	e.mu.Unlock()
	s := &e.stats
	return Stats{
		Deliveries: s.deliveries.Load(), Redeliveries: s.redeliveries.Load(), Acks: s.acks.Load(),
		Naks: s.naks.Load(), Terms: s.terms.Load(), DeadLetters: s.deadLetters.Load(),
		AckFlushes: s.flushes.Load(), AckFlushErrors: s.flushErrors.Load(), AckUpdates: s.flushedUpdates.Load(),
		Heartbeats: s.heartbeats.Load(), Expired: s.expired.Load(), InterestLost: s.interestLost.Load(),
		NoMessages: s.noMessages.Load(), PublishErrors: s.publishErrors.Load(), Parked: s.parked.Load(), Consumers: n,
	}
}

// NewEngine checks cfg and makes an engine; Start runs it.
func NewEngine(cfg Config) (*JSEngine, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	e := &JSEngine{
		cfg:     c,
		epoch:   strconv.FormatUint(uint64(c.Clock.Now().UnixNano()), 10),
		live:    map[consumerKey]*consumer{},
		byQueue: map[queueKey][]*consumer{},
		byInbox: map[inboxKey]map[*consumer]struct{}{},
		loading: map[consumerKey][]func(*consumer, error, bool){},
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	e.flush = newFlusher(e)
	e.lost.signal = make(chan struct{}, 1)
	e.quit = make(chan struct{})
	return e, nil
}

// Start starts the flusher, the interest watch and the sweep of idle
// consumers.
func (e *JSEngine) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started {
		return nil
	}
	e.started = true
	e.cfg.Deliverer.OnInterestLost(e.lost.push)
	e.bg.Add(3)
	go e.flush.loop()
	go e.interestLoop()
	go e.sweepLoop()
	return nil
}

// Stop answers every parked request 408 with its pending headers (so
// Fetch ends cleanly and Consume pulls again, reaching another bridge),
// stops the consumers, stores the last acknowledgements and answers their
// double acks, then stops. Idempotent.
func (e *JSEngine) Stop(ctx context.Context) error {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return nil
	}
	e.stopped = true
	cs := make([]*consumer, 0, len(e.live))
	for _, c := range e.live {
		cs = append(cs, c)
	}
	e.mu.Unlock()
	for _, c := range cs {
		c.stop(descTimeout, 408, true)
	}
	for _, c := range cs {
		<-c.done
	}
	close(e.quit)
	e.flush.close()
	done := make(chan struct{})
	go func() { e.bg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		e.cancel()
		<-done
		return fmt.Errorf("cursors: stop: %w", ctx.Err())
	}
	e.cancel()
	return nil
}

// publish sends through the Deliverer, counting what it refuses.
func (e *JSEngine) publish(tenant tenancy.TenantID, subject, reply string, header, body []byte) {
	if err := e.cfg.Deliverer.Publish(tenant, subject, reply, header, body); err != nil {
		e.stats.publishErrors.Add(1)
		if publishLog.Allow() {
			e.cfg.Logger.Warn().Err(err).Str("subject", subject).Msg("delivery not sent")
		}
	}
}

// publishLog limits the warnings of refused sends.
var publishLog = every.New(10 * time.Second)

// call runs a Store call under the call timeout.
func (e *JSEngine) call(fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(e.ctx, e.cfg.CallTimeout)
	defer cancel()
	return fn(ctx)
}

// owned checks that this bridge owns the consumer.
func (e *JSEngine) owned(tenant tenancy.TenantID, stream, name string) error {
	if self, id := e.cfg.Owner(tenant, stream, "$js."+name); !self {
		return ErrNotOwner{ID: id}
	}
	return nil
}

func (e *JSEngine) stream(stream string) ([]string, error) {
	f, ok := e.cfg.Streams[stream]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrStreamNotFound, stream)
	}
	return f, nil
}

// liveOne is the consumer if it lives here (nil when it must be loaded
// first), or why it cannot be served here: a stream not declared, a
// consumer another bridge owns, the engine stopped.
func (e *JSEngine) liveOne(tenant tenancy.TenantID, stream, name string) (*consumer, error) {
	if _, err := e.stream(stream); err != nil {
		return nil, err
	}
	if err := e.owned(tenant, stream, name); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped || !e.started {
		return nil, ErrStopped
	}
	return e.live[consumerKey{tenant, stream, name}], nil
}

// with runs fn with the live consumer: at once when it lives here, else
// once a load from the Store ended, on the loading goroutine (later
// true; fn gets the load's error: ErrConsumerNotFound, ErrStopped, a
// Store failure). So a
// pull or an ack never waits for PostgreSQL on its caller's goroutine
// (the API's subscription). A stream not declared, or a consumer living on
// another bridge, is an error at once.
func (e *JSEngine) with(tenant tenancy.TenantID, stream, name string, fn func(c *consumer, err error, later bool)) error {
	c, err := e.liveOne(tenant, stream, name)
	if err != nil {
		return err
	}
	if c != nil {
		fn(c, nil, false)
		return nil
	}
	k := consumerKey{tenant, stream, name}
	e.mu.Lock()
	if e.stopped || !e.started {
		e.mu.Unlock()
		return ErrStopped
	}
	if c := e.live[k]; c != nil {
		e.mu.Unlock()
		fn(c, nil, false)
		return nil
	}
	waiting, ok := e.loading[k]
	e.loading[k] = append(waiting, fn)
	if !ok {
		e.bg.Add(1)
		go e.loadLive(k)
	}
	e.mu.Unlock()
	return nil
}

// loadLive loads a consumer, makes it live, and runs what waited for it.
func (e *JSEngine) loadLive(k consumerKey) {
	defer e.bg.Done()
	c, err := e.load(k)
	e.mu.Lock()
	fns := e.loading[k]
	delete(e.loading, k)
	if err == nil && e.stopped {
		err = ErrStopped
	}
	if err == nil {
		e.live[k] = c
		e.nlive.Store(int64(len(e.live)))
		q := queueKey{k.tenant, k.stream}
		e.byQueue[q] = append(e.byQueue[q], c)
		e.bg.Add(1)
		go c.run()
	}
	e.mu.Unlock()
	if err != nil && !errors.Is(err, ErrConsumerNotFound) && !errors.Is(err, ErrStopped) {
		e.cfg.Logger.Warn().Err(err).Str("consumer", k.name).Msg("consumer not loaded")
	}
	for _, fn := range fns {
		fn(c, err, true)
	}
}

// load reads a consumer's definition and partitions: everything above
// each floor that is not acknowledged is deliverable again, at once. The
// Store does not record which offsets were delivered (only acks and the
// counts of redelivered ones), so waiting ack_wait here would hold back
// the never-delivered backlog too; what a dead bridge had in flight comes
// back at once instead, and a late ack of it is still taken.
func (e *JSEngine) load(k consumerKey) (*consumer, error) {
	var def StoredConsumer
	var parts []PartitionState
	err := e.call(func(ctx context.Context) error {
		var err error
		if def, err = e.cfg.Store.GetConsumer(ctx, k.tenant, k.stream, k.name); err != nil {
			return err
		}
		parts, err = e.cfg.Store.ConsumerPartitions(ctx, def.ID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("cursors: load consumer %s of %s: %w", k.name, k.stream, missing(err))
	}
	conf, err := decodeConfig(k.name, def.Config)
	if err != nil {
		return nil, err
	}
	c := newConsumer(e, k, def, conf)
	c.merge(parts)
	return c, nil
}

// forget removes a consumer from the registry (deleted or inactive).
func (e *JSEngine) forget(c *consumer) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.live[c.key] == c {
		delete(e.live, c.key)
		e.nlive.Store(int64(len(e.live)))
	}
	q := queueKey{c.key.tenant, c.key.stream}
	list := e.byQueue[q]
	for i, x := range list {
		if x == c {
			list = append(list[:i:i], list[i+1:]...) // a new array: readers of queueConsumers may hold the old one
			break
		}
	}
	if len(list) == 0 {
		delete(e.byQueue, q)
	} else {
		e.byQueue[q] = list
	}
}

// inboxKey is a tenant's inbox: interest is per tenant account.
type inboxKey struct {
	tenant tenancy.TenantID
	inbox  string
}

// parkInbox and unparkInbox index parked requests by inbox, for interest
// lost.
func (e *JSEngine) parkInbox(inbox string, c *consumer) {
	k := inboxKey{c.key.tenant, inbox}
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.byInbox[k]
	if m == nil {
		m = map[*consumer]struct{}{}
		e.byInbox[k] = m
	}
	m[c] = struct{}{}
}

func (e *JSEngine) unparkInbox(inbox string, c *consumer) {
	k := inboxKey{c.key.tenant, inbox}
	e.mu.Lock()
	defer e.mu.Unlock()
	if m := e.byInbox[k]; m != nil {
		delete(m, c)
		if len(m) == 0 {
			delete(e.byInbox, k)
		}
	}
}
