package bridge

import (
	"context"
	"net/http"

	"github.com/queenbridge/queenbridge/internal/httpserve"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
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
