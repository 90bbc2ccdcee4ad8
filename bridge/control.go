package bridge

import (
	"context"
	"net/http"

	"github.com/nats-io/nats.go/micro"
	"github.com/queenbridge/queenbridge/auth"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/push"
)

// The calls that change how queues and the service run: queue
// configuration (the queue settings store, cache and broadcast it; options
// left out keep their value) and maintenance mode (durability reads and
// switches it; over HTTP it is an admin route of the admin room).

func (b *Bridge) configure(ctx context.Context, tenant tenancy.TenantID, _ *http.Request, body []byte) (int, []byte) {
	if b.gate.Closed() {
		return http.StatusServiceUnavailable, jsonapi.AppendError(nil, push.ErrStopping)
	}
	req, err := jsonapi.DecodeConfigure(body)
	if err != nil {
		return badRequest(err)
	}
	return b.queues.ServeConfigure(ctx, tenant, req)
}

func (b *Bridge) natsConfigure(req micro.Request) {
	b.natsWorker(req, func(ctx context.Context, tenant tenancy.TenantID) (int, []byte) {
		return b.configure(ctx, tenant, nil, req.Data())
	})
}

// natsMaintenance: in the accounts mode only the bridges' own account may
// read or switch maintenance; a request through a tenant's import is
// refused.
func (b *Bridge) natsMaintenance(req micro.Request) {
	if b.accounts.Enabled() && req.Headers().Get(auth.RequestInfoHeader) != "" {
		respondNATS(b.cfg.NATS, req, http.StatusForbidden, jsonapi.AppendError(nil, "maintenance mode is switched from the bridges' own NATS account only"))
		return
	}
	b.enqueue(req, func() {
		defer b.gate.Done()
		var status int
		var out []byte
		if enabled, err := jsonapi.DecodeMaintenance(req.Data()); err != nil {
			status, out = badRequest(err)
		} else {
			status, out = b.keeper.ServeMaintenance(context.Background(), enabled)
		}
		respondNATS(b.cfg.NATS, req, status, out)
	})
}
