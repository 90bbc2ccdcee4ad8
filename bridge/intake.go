package bridge

import (
	"context"
	"net/http"

	"github.com/queenbridge/queenbridge/console"
	"github.com/queenbridge/queenbridge/internal/httpserve"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/publish"
	"github.com/queenbridge/queenbridge/push"
)

// PushItem pushes one item that another intake decoded (the JetStream
// intake: one message, one item) through the path of a one-item push
// request: the tenant's queue, layer-1 deduplication on its transactionId
// (minted when empty), encryption, ownership and fusion, the spool when
// PostgreSQL cannot take it or maintenance is on, and discovery once it is
// written. It takes the payload's bytes from the in-flight budget until the
// answer, as a NATS push takes its body's.
//
// done is called exactly once, maybe on another goroutine: with 201 and
// the item's result (queued, duplicate or buffered), 500 and a failed
// result, or, for a push refused as a whole, 400 or 503 and a result that
// carries only the reason in Error. done must not block: it runs where the
// verdict is settled (a fusion goroutine, or the caller's).
//
// Like a NATS push it runs on the caller's goroutine when the queue's
// settings are cached (nothing then waits), and on the worker pool when
// they must be read first or the budget is full. It never waits for the
// verdict.
func (b *Bridge) PushItem(transport string, tenant tenancy.TenantID, it jsonapi.Item, done func(status int, r jsonapi.Result)) {
	size := int64(len(it.Payload))
	answer := func(status int, r jsonapi.Result) {
		done(status, r)
		b.budget.Give(size)
		b.gate.Done()
	}
	items := []jsonapi.Item{it}
	if !b.budget.TryTake(size) {
		// The caller's goroutine (a subscription's) does not wait: a worker
		// waits briefly for room, then answers 503.
		ok := b.gate.Go(func() {
			if !b.budget.Take(context.Background(), size, b.cfg.BudgetWait) {
				done(http.StatusServiceUnavailable, jsonapi.Result{Error: httpserve.ErrBusy.Error()})
				b.gate.Done()
				return
			}
			b.pusher.Push(context.Background(), transport, tenant, items, push.Answer{Item: answer})
		})
		if !ok {
			done(http.StatusServiceUnavailable, jsonapi.Result{Error: push.ErrStopping})
		}
		return
	}
	run := func() {
		b.pusher.Push(context.Background(), transport, tenant, items, push.Answer{Item: answer})
	}
	var ok bool
	if b.queues.AllFresh(tenant, 1, func(int) string { return it.Queue }) {
		if ok = b.gate.Admit(); ok {
			run()
		}
	} else {
		ok = b.gate.Go(run)
	}
	if !ok {
		b.budget.Give(size)
		done(http.StatusServiceUnavailable, jsonapi.Result{Error: push.ErrStopping})
	}
}

// PushItems pushes the publish relay's batch through the path of one push
// request (PushItem's, for many items: grouping by partition keeps their
// order within each) for tenant, and returns when every item has its
// verdict: the push's status and one result per item. It runs on the
// caller's goroutine (the relay's own, which may wait), so it needs no
// worker; it waits for room in the in-flight budget as a body does.
func (b *Bridge) PushItems(ctx context.Context, transport string, tenant tenancy.TenantID, items []jsonapi.Item) (int, []jsonapi.Result) {
	var size int64
	for i := range items {
		size += int64(len(items[i].Payload))
	}
	refused := func(status int, msg string) (int, []jsonapi.Result) {
		return status, []jsonapi.Result{{Status: jsonapi.StatusFailed, Error: msg}}
	}
	if !b.gate.Admit() {
		return refused(http.StatusServiceUnavailable, push.ErrStopping)
	}
	defer b.gate.Done()
	if !b.budget.Take(ctx, size, b.cfg.BudgetWait) {
		return refused(http.StatusServiceUnavailable, httpserve.ErrBusy.Error())
	}
	defer b.budget.Give(size)
	type answer struct {
		status int
		rs     []jsonapi.Result
	}
	done := make(chan answer, 1)
	b.pusher.Push(ctx, transport, tenant, items, push.Answer{Items: func(status int, rs []jsonapi.Result) { done <- answer{status, rs} }})
	a := <-done
	return a.status, a.rs
}

// PublishStats are the publish relay's figures per watched database.
func (b *Bridge) PublishStats() []publish.SourceStats { return b.relay.Stats() }

// publishFigures are the relay's slots as the console shows them.
func (b *Bridge) publishFigures() []console.OverviewSlot {
	st := b.relay.Stats()
	if len(st) == 0 {
		return nil
	}
	out := make([]console.OverviewSlot, len(st))
	for i, s := range st {
		out[i] = console.OverviewSlot{Database: s.Database, Slot: s.Slot, State: s.State, Relayed: s.Relayed,
			LagBytes: s.LagBytes, LagSeconds: s.Lag.Seconds(), Behind: s.Behind}
	}
	return out
}
