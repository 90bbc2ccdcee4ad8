package jsconsume_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	js "github.com/nats-io/nats.go/jetstream"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// caseSeq numbers the cases of the test binary, so that each has subjects
// and consumer names of its own in the shared stream.
var caseSeq atomic.Int64

// consumeCase is what one consumer case sees: the target, a deadline, and
// subjects and consumer names of its own in the shared stream ORDERS.
type consumeCase struct {
	*consumeTarget
	ctx context.Context
	tag string // c<n>: the case's subjects are orders.<tag>.…, its consumers <tag>_…
}

func newConsumeCase(t *testing.T, tg *consumeTarget) *consumeCase {
	return &consumeCase{consumeTarget: tg, ctx: deadline(t, 2*time.Minute), tag: fmt.Sprintf("c%d", caseSeq.Add(1))}
}

// subject is one of the case's subjects: orders.<tag>.<rest>. On the
// bridge the tokens after orders. are the partition, so each rest is a
// partition of its own.
func (c *consumeCase) subject(rest string) string { return "orders." + c.tag + "." + rest }

// all is the filter for every subject of the case.
func (c *consumeCase) all() string { return "orders." + c.tag + ".>" }

// msgID is the Nats-Msg-Id of the case's message id: unique in the
// stream, whose duplicate window the cases share.
func (c *consumeCase) msgID(id string) string { return c.tag + "-" + id }

// name is a consumer name of the case's.
func (c *consumeCase) name(n string) string { return c.tag + "_" + n }

// publish stores one message on subject: body {"id":<id>}, Nats-Msg-Id
// msgID(id).
func (c *consumeCase) publish(t *testing.T, subject, id string) *js.PubAck {
	t.Helper()
	ack, err := c.js.Publish(c.ctx, subject, []byte(`{"id":"`+id+`"}`), js.WithMsgID(c.msgID(id)))
	if err != nil {
		t.Fatalf("publish %s on %s: %v", id, subject, err)
	}
	if ack.Stream != ordersStream || ack.Duplicate {
		t.Fatalf("publish %s on %s: %+v", id, subject, ack)
	}
	return ack
}

// durable creates the durable pull consumer name with cfg; the filter is
// the case's subjects unless cfg names one, ack_wait 30 s unless set.
func (c *consumeCase) durable(t *testing.T, name string, cfg js.ConsumerConfig) js.Consumer {
	t.Helper()
	cfg.Durable = c.name(name)
	if cfg.FilterSubject == "" && len(cfg.FilterSubjects) == 0 {
		cfg.FilterSubject = c.all()
	}
	if cfg.AckWait == 0 {
		cfg.AckWait = 30 * time.Second
	}
	cons, err := c.js.CreateConsumer(c.ctx, ordersStream, cfg)
	if err != nil {
		t.Fatalf("create consumer %s: %v", cfg.Durable, err)
	}
	return cons
}

// fetch takes what one Fetch(batch) gets within wait; the fetch must end
// without an error (an expiry is no error).
func fetch(t *testing.T, cons js.Consumer, batch int, wait time.Duration) []js.Msg {
	t.Helper()
	b, err := cons.Fetch(batch, js.FetchMaxWait(wait))
	if err != nil {
		t.Fatalf("fetch %d: %v", batch, err)
	}
	return drain(t, b)
}

func drain(t *testing.T, b js.MessageBatch) []js.Msg {
	t.Helper()
	var out []js.Msg
	for m := range b.Messages() {
		out = append(out, m)
	}
	if err := b.Error(); err != nil {
		t.Fatalf("the batch ended with %v after %d messages", err, len(out))
	}
	return out
}

// fetchUntil fetches until n messages came, within the case's deadline.
func (c *consumeCase) fetchUntil(t *testing.T, cons js.Consumer, n int) []js.Msg {
	t.Helper()
	var out []js.Msg
	for len(out) < n {
		if c.ctx.Err() != nil {
			t.Fatalf("%d of %d messages before the deadline: %v", len(out), n, ids(t, out))
		}
		out = append(out, fetch(t, cons, n-len(out), 2*time.Second)...)
	}
	return out
}

// takeIDs fetches as many messages as want names, wants them in that order,
// and acknowledges them (double acks: answered once stored).
func (c *consumeCase) takeIDs(t *testing.T, cons js.Consumer, want ...string) {
	t.Helper()
	got := c.fetchUntil(t, cons, len(want))
	wantIDs(t, got, want...)
	ackAll(t, c.ctx, got)
}

// takePerSubject fetches as many messages as want lists, wants each
// subject's in want's order (none of another subject), and acknowledges them.
func (c *consumeCase) takePerSubject(t *testing.T, cons js.Consumer, want map[string][]string) {
	t.Helper()
	n := 0
	for _, ids := range want {
		n += len(ids)
	}
	got := c.fetchUntil(t, cons, n)
	wantPerSubject(t, got, want)
	ackAll(t, c.ctx, got)
}

// wantDelivery wants msgs to be the one message id, handed for the nth time
// (its NumDelivered).
func wantDelivery(t *testing.T, msgs []js.Msg, id string, n uint64) {
	t.Helper()
	wantIDs(t, msgs, id)
	if md := meta(t, msgs[0]); md.NumDelivered != n {
		t.Fatalf("%s: delivery counted %d, want %d", id, md.NumDelivered, n)
	}
}

// idOf is the id in a message's body.
func idOf(t *testing.T, m js.Msg) string {
	t.Helper()
	var b struct{ ID string }
	if err := json.Unmarshal(m.Data(), &b); err != nil || b.ID == "" {
		t.Fatalf("a message on %s with body %q", m.Subject(), m.Data())
	}
	return b.ID
}

func ids(t *testing.T, msgs []js.Msg) []string {
	t.Helper()
	var out []string
	for _, m := range msgs {
		out = append(out, idOf(t, m))
	}
	return out
}

// wantIDs checks msgs are these, in this order.
func wantIDs(t *testing.T, msgs []js.Msg, want ...string) {
	t.Helper()
	if got := ids(t, msgs); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// wantPerSubject checks msgs hold exactly these ids per subject, each
// subject's in order. Order across subjects is not asserted: the bridge's
// sequences are partition offsets (a subject is a partition) and a partition
// is handed out as a run, so only the order within a subject is common to
// both targets (JetStream orders the whole stream, which implies it).
func wantPerSubject(t *testing.T, msgs []js.Msg, want map[string][]string) {
	t.Helper()
	got := map[string][]string{}
	for _, m := range msgs {
		got[m.Subject()] = append(got[m.Subject()], idOf(t, m))
	}
	if len(got) != len(want) {
		t.Fatalf("per subject: got %v, want %v", got, want)
	}
	for s, w := range want {
		if !slices.Equal(got[s], w) {
			t.Fatalf("per subject: got %v, want %v", got, want)
		}
	}
}

func meta(t *testing.T, m js.Msg) *js.MsgMetadata {
	t.Helper()
	md, err := m.Metadata()
	if err != nil {
		t.Fatalf("metadata of %s: %v", m.Subject(), err)
	}
	return md
}

func ackAll(t *testing.T, ctx context.Context, msgs []js.Msg) {
	t.Helper()
	for _, m := range msgs {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatalf("ack %s: %v", idOf(t, m), err)
		}
	}
}

// wantNothing checks a FetchNoWait finds nothing to deliver.
func wantNothing(t *testing.T, cons js.Consumer) {
	t.Helper()
	b, err := cons.FetchNoWait(10)
	if err != nil {
		t.Fatal(err)
	}
	if got := drain(t, b); len(got) != 0 {
		t.Fatalf("nothing expected, got %v", ids(t, got))
	}
}

// info is the consumer's info now.
func info(t *testing.T, ctx context.Context, cons js.Consumer) *js.ConsumerInfo {
	t.Helper()
	ci, err := cons.Info(ctx)
	if err != nil {
		t.Fatalf("consumer info: %v", err)
	}
	return ci
}

// infoAfterPublishes is the consumer's info once the messages whose
// PubAcks came back count in it. The bridge counts them at once (its info
// reads the Store); nats-server moves a consumer's pending count on a
// goroutine of its own after the PubAck, so on the JetStream target the
// info is read again until it counts pending, for up to 5 s.
func (c *consumeCase) infoAfterPublishes(t *testing.T, cons js.Consumer, pending uint64) *js.ConsumerInfo {
	t.Helper()
	if c.bridge == nil {
		testkit.WaitFor(t, "nats-server to count the published messages", 5*time.Second, func() bool {
			return info(t, c.ctx, cons).NumPending >= pending
		})
	}
	return info(t, c.ctx, cons)
}

// consumeInto runs a Consume on cons until the case ends or its Stop: each
// message double-acked (answered once stored) goes into the received it
// answers, with what the Consume reports as errors.
func (c *consumeCase) consumeInto(t *testing.T, cons js.Consumer) (*received, js.ConsumeContext) {
	t.Helper()
	r := &received{}
	cc, err := cons.Consume(func(m js.Msg) {
		if m.DoubleAck(c.ctx) == nil {
			r.add(m)
		}
	}, js.ConsumeErrHandler(r.addErr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cc.Stop) // Stop is idempotent: a case may stop it sooner
	return r, cc
}

// received collects what a Consume handler or a Messages loop is handed,
// and the errors a Consume reports. The handler's goroutine (nats.go's)
// writes, the test reads: mu guards both.
type received struct {
	mu   sync.Mutex
	msgs []js.Msg
	errs []error
}

func (r *received) add(m js.Msg) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, m)
}

func (r *received) addErr(_ js.ConsumeContext, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, err)
}

func (r *received) snapshot() ([]js.Msg, []error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.msgs), slices.Clone(r.errs)
}

func (r *received) count() int {
	m, _ := r.snapshot()
	return len(m)
}

// sawErr tells whether the Consume reported an error that is target.
func (r *received) sawErr(target error) bool {
	_, errs := r.snapshot()
	for _, e := range errs {
		if errors.Is(e, target) {
			return true
		}
	}
	return false
}

// consumerNames lists the stream's consumers by name.
func (c *consumeCase) consumerNames(t *testing.T) []string {
	t.Helper()
	s, err := c.js.Stream(c.ctx, ordersStream)
	if err != nil {
		t.Fatalf("stream info: %v", err)
	}
	names := s.ConsumerNames(c.ctx)
	var out []string
	for n := range names.Name() {
		out = append(out, n)
	}
	if err := names.Err(); err != nil {
		t.Fatalf("consumer names: %v", err)
	}
	return out
}
