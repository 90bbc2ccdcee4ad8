package jetstream

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// nats.go's jetstream package, unchanged, against the API: what it checks
// on each answer (the name and filter echoes, an empty deliver_subject,
// its strict enums, the error codes it maps to its own errors) passes.
func TestNatsGoJetStreamCallsPass(t *testing.T) {
	h := newHarness(t, nil)
	js, err := jetstream.NewWithDomain(h.nc, h.api.cfg.Domain)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

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
