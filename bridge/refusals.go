package bridge

import (
	"context"
	"net/http"

	"github.com/queenbridge/queenbridge/consume"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/push"
)

// The front door decodes every request (jsonapi) and answers one that does
// not decode itself: the rooms are handed decoded requests only, and count
// the refusals they make themselves (validation, stopping, maintenance).
// Where a room counts every request of a kind (pushes, transactions), the
// refusals answered here are counted here, into the same counter, so the
// figures do not depend on who refused.

// badRequest answers a request that did not decode: 400 and what was wrong.
func badRequest(err error) (int, []byte) {
	return http.StatusBadRequest, jsonapi.AppendError(nil, err.Error())
}

// pushBody decodes a push body and runs the push call on it, or answers
// the body's refusal itself (badPush).
func (b *Bridge) pushBody(ctx context.Context, transport string, tenant tenancy.TenantID, body []byte, answer func(int, []byte)) {
	items, err := jsonapi.DecodePush(body)
	if err != nil {
		answer(b.badPush(transport, err))
		return
	}
	b.pusher.Push(ctx, transport, tenant, items, push.Answer{Body: answer})
}

// badPush answers a push body that did not decode: 400 and what was wrong,
// or 503 while the bridge stops (every push is refused so then, whatever
// its body). It is counted as a request of transport, as the push call
// counts those it takes.
func (b *Bridge) badPush(transport string, err error) (int, []byte) {
	b.metrics.Request(transport)
	if b.gate.Closed() {
		return http.StatusServiceUnavailable, jsonapi.AppendError(nil, push.ErrStopping)
	}
	return badRequest(err)
}

// badTransaction answers a transaction body that did not decode, counted
// as a refused transaction as the consume room counts those it refuses.
func (b *Bridge) badTransaction(err error) (int, []byte) {
	b.metrics.Transaction(consume.TxnRefused)
	return badRequest(err)
}
