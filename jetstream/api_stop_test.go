package jetstream

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// Stop answers what it took: a request being served when Stop is called
// gets its answer, and Stop returns once it is sent.
func TestStopAnswersRequestsInFlight(t *testing.T) {
	h := newHarness(t, nil)
	entered, release := make(chan struct{}), make(chan struct{})
	h.engine.mu.Lock()
	h.engine.hold = func(context.Context) { close(entered); <-release }
	h.engine.mu.Unlock()
	inbox := nats.NewInbox()
	answers, err := h.nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.nc.PublishRequest(h.prefix+"CONSUMER.NAMES.ORDERS", inbox, nil); err != nil {
		t.Fatal(err)
	}
	<-entered
	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		stopped <- h.api.Stop(ctx)
	}()
	close(release)
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
	m, err := answers.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("the request in flight was not answered: %v", err)
	}
	if e := apiAnswer(t, m.Data); e != nil {
		t.Fatalf("the request in flight was answered %+v", e)
	}
}

// Past its deadline Stop cancels the engine calls still running and says
// it gave up waiting.
func TestStopCancelsEngineCallsPastItsDeadline(t *testing.T) {
	h := newHarness(t, nil)
	entered, cancelled := make(chan struct{}), make(chan struct{})
	h.engine.mu.Lock()
	h.engine.hold = func(ctx context.Context) { close(entered); <-ctx.Done(); close(cancelled) }
	h.engine.mu.Unlock()
	if err := h.nc.PublishRequest(h.prefix+"CONSUMER.NAMES.ORDERS", nats.NewInbox(), nil); err != nil {
		t.Fatal(err)
	}
	<-entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h.stopped = true
	if err := h.api.Stop(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop with a spent context: %v", err)
	}
	<-cancelled // the engine call saw its context end; Stop waited for its worker
}
