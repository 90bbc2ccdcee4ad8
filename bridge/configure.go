package bridge

import (
	"context"
	"net/http"

	"github.com/nats-io/nats.go/micro"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/push"
)

// configure hands a configure request to the queue settings, which store,
// cache and broadcast it; options left out keep their value.
func (b *Bridge) configure(ctx context.Context, tenant tenancy.TenantID, body []byte) (int, []byte) {
	if b.gate.Closed() {
		return http.StatusServiceUnavailable, jsonapi.ErrorBody(push.ErrStopping)
	}
	req, err := jsonapi.DecodeConfigure(body)
	return b.queues.ServeConfigure(ctx, tenant, req, err)
}

func (b *Bridge) natsConfigure(req micro.Request) {
	b.natsWorker(req, func(ctx context.Context, tenant tenancy.TenantID) (int, []byte) {
		return b.configure(ctx, tenant, req.Data())
	})
}
