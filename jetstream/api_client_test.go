package jetstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// nats.go's jetstream package, unchanged, against the API: what it checks
// on each answer (the name and filter echoes, an empty deliver_subject,
// its strict enums, the error codes it maps to its own errors) passes.
func TestNatsGoJetStreamCallsPass(t *testing.T) {
	h := newHarness(t, nil)
	js, ctx := h.jetStream(t)

	s, err := js.Stream(ctx, "ORDERS")
	if err != nil {
		t.Fatalf("js.Stream: %v", err)
	}
	si := s.CachedInfo()
	if si.Config.Name != "ORDERS" || !slices.Equal(si.Config.Subjects, []string{"orders.>"}) || si.State.Msgs != 42 || si.State.LastSeq != 30 {
		t.Fatalf("stream info: %+v", si)
	}
	if _, err := js.Stream(ctx, "NOPE"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("js.Stream of an unknown stream: %v, want ErrStreamNotFound", err)
	}

	// Several filters: nats.go checks they are echoed.
	c, err := js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{
		Durable: "workers", AckPolicy: jetstream.AckExplicitPolicy, FilterSubjects: []string{"orders.eu.>", "orders.us.>"},
	})
	if err != nil {
		t.Fatalf("CreateOrUpdateConsumer: %v", err)
	}
	ci := c.CachedInfo()
	if ci.Name != "workers" || ci.Config.AckWait != 30*time.Second || ci.Config.MaxWaiting != 512 || ci.Config.MaxAckPending != 1000 ||
		ci.Config.MaxDeliver != -1 || !slices.Equal(ci.Config.FilterSubjects, []string{"orders.eu.>", "orders.us.>"}) {
		t.Fatalf("created consumer: %+v", ci.Config)
	}
	// One filter: the CREATE subject carries it as tokens.
	if _, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "eu", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "orders.eu.*"}); err != nil {
		t.Fatalf("CreateConsumer with a filter subject: %v", err)
	}
	// An ephemeral one: nats.go names it in the subject only.
	eph, err := js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy})
	if err != nil {
		t.Fatalf("ephemeral consumer: %v", err)
	}
	if ei := eph.CachedInfo(); ei.Name == "" || ei.Config.Durable != "" || ei.Config.InactiveThreshold != 5*time.Second || ei.Config.AckWait != 0 {
		t.Fatalf("ephemeral consumer: %+v", ei)
	}

	got, err := js.Consumer(ctx, "ORDERS", "workers")
	if err != nil {
		t.Fatalf("js.Consumer: %v", err)
	}
	info, err := got.Info(ctx)
	if err != nil || info.Config.Durable != "workers" || info.NumPending != 42 {
		t.Fatalf("Info: %+v, %v", info, err)
	}
	if _, err := js.Consumer(ctx, "ORDERS", "nobody"); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("js.Consumer of an unknown consumer: %v, want ErrConsumerNotFound", err)
	}
	if _, err := js.CreateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "workers", AckPolicy: jetstream.AckAllPolicy}); !errors.Is(err, jetstream.ErrConsumerExists) {
		t.Fatalf("CreateConsumer over another config: %v, want ErrConsumerExists", err)
	}
	if _, err := js.UpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "ghost", AckPolicy: jetstream.AckExplicitPolicy}); !errors.Is(err, jetstream.ErrConsumerDoesNotExist) {
		t.Fatalf("UpdateConsumer of none: %v, want ErrConsumerDoesNotExist", err)
	}
	if _, err := js.CreateOrUpdateConsumer(ctx, "NOPE", jetstream.ConsumerConfig{Durable: "x"}); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("consumer on an unknown stream: %v, want ErrStreamNotFound", err)
	}
	var apiErr *jetstream.APIError
	if _, err := js.CreateOrUpdatePushConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "push", DeliverSubject: "deliver.here"}); !errors.As(err, &apiErr) || apiErr.ErrorCode != 10003 {
		t.Fatalf("push consumer: %v, want API error 10003", err)
	}

	var names []string
	lister := s.ConsumerNames(ctx)
	for n := range lister.Name() {
		names = append(names, n)
	}
	if lister.Err() != nil {
		t.Fatal(lister.Err())
	}
	if want := []string{eph.CachedInfo().Name, "eu", "workers"}; !slices.Equal(names, sortedCopy(want)) {
		t.Fatalf("ConsumerNames: %v, want %v", names, sortedCopy(want))
	}
	infos := s.ListConsumers(ctx)
	n := 0
	for range infos.Info() {
		n++
	}
	if infos.Err() != nil || n != 3 {
		t.Fatalf("ListConsumers: %d, %v", n, infos.Err())
	}

	if err := js.DeleteConsumer(ctx, "ORDERS", "workers"); err != nil {
		t.Fatalf("DeleteConsumer: %v", err)
	}
	if err := js.DeleteConsumer(ctx, "ORDERS", "workers"); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("DeleteConsumer again: %v, want ErrConsumerNotFound", err)
	}
	ai, err := js.AccountInfo(ctx)
	if err != nil || ai.Streams != 2 || ai.Consumers != 2 || ai.Store != 2*4200 {
		t.Fatalf("AccountInfo: %+v, %v", ai, err)
	}
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// The pull requests nats.go's calls send reach the engine as it meant
// them: Fetch, FetchNoWait, FetchBytes, Messages, Consume and Next.
func TestNatsGoPullRequestsReachTheEngine(t *testing.T) {
	h := newHarness(t, nil)
	js, ctx := h.jetStream(t)
	c, err := js.CreateOrUpdateConsumer(ctx, "ORDERS", jetstream.ConsumerConfig{Durable: "workers", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	pulled := func(n int) []PullRequest {
		t.Helper()
		testkit.WaitFor(t, fmt.Sprintf("%d pull requests", n), 10*time.Second, func() bool {
			pulls, _ := h.engine.recorded()
			return len(pulls) >= n
		})
		pulls, _ := h.engine.recorded()
		var out []PullRequest
		for _, p := range pulls {
			if p.stream != "ORDERS" || p.name != "workers" || !strings.HasPrefix(p.inbox, "_INBOX.") {
				t.Fatalf("pull %+v", p)
			}
			out = append(out, p.req)
		}
		return out
	}
	if _, err := c.Fetch(3, jetstream.FetchMaxWait(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := pulled(1)[0]; got != (PullRequest{Batch: 3, Expires: 2 * time.Second}) {
		t.Errorf("Fetch(3, FetchMaxWait(2s)): %+v", got)
	}
	if _, err := c.FetchNoWait(10); err != nil {
		t.Fatal(err)
	}
	if got := pulled(2)[1]; got != (PullRequest{Batch: 10, NoWait: true}) {
		t.Errorf("FetchNoWait(10): %+v", got)
	}
	if _, err := c.FetchBytes(4096, jetstream.FetchMaxWait(time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := pulled(3)[2]; got.MaxBytes != 4096 || got.Expires != time.Second || got.Batch < 1 {
		t.Errorf("FetchBytes(4096): %+v", got)
	}
	it, err := c.Messages()
	if err != nil {
		t.Fatal(err)
	}
	next := make(chan error, 1)
	go func() { _, err := it.Next(); next <- err }() // the iterator pulls on its first Next
	got := pulled(4)[3]
	it.Stop()
	if err := <-next; !errors.Is(err, jetstream.ErrMsgIteratorClosed) {
		t.Errorf("Messages().Next after Stop: %v", err)
	}
	if got != (PullRequest{Batch: 500, Expires: 30 * time.Second, Heartbeat: 15 * time.Second}) {
		t.Errorf("Messages(): %+v", got)
	}
	cc, err := c.Consume(func(jetstream.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	got = pulled(5)[4]
	cc.Stop()
	if got != (PullRequest{Batch: 500, Expires: 30 * time.Second, Heartbeat: 15 * time.Second}) {
		t.Errorf("Consume(): %+v", got)
	}
	// Next blocks until a message, its expiry or the connection's end:
	// the last, once its request is seen.
	done := make(chan error, 1)
	go func() { _, err := c.Next(); done <- err }()
	got = pulled(6)[5]
	h.nc.Close()
	if err := <-done; err == nil {
		t.Error("Next returned a message from an engine that delivers none")
	}
	if got != (PullRequest{Batch: 1, Expires: 30 * time.Second, Heartbeat: 5 * time.Second}) {
		t.Errorf("Next(): %+v", got)
	}
}

// jetStream is nats.go's JetStream client on the harness's domain, and a
// context that ends with the test.
func (h *harness) jetStream(t *testing.T) (jetstream.JetStream, context.Context) {
	t.Helper()
	js, err := jetstream.NewWithDomain(h.nc, h.api.cfg.Domain)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return js, ctx
}
