package bridge

import (
	"context"
	"net/http"

	"github.com/nats-io/nats.go/micro"
	"github.com/queenbridge/queenbridge/auth"
	"github.com/queenbridge/queenbridge/jsonapi"
)

// Maintenance mode is read and switched by durability (ServeMaintenance);
// here is its NATS transport. Over HTTP it is an admin route (admin).

// natsMaintenance: in the accounts mode only the bridges' own account may
// read or switch maintenance; a request through a tenant's import is
// refused.
func (b *Bridge) natsMaintenance(req micro.Request) {
	if b.accounts.Enabled() && req.Headers().Get(auth.RequestInfoHeader) != "" {
		respondNATS(b.cfg.NATS, req, http.StatusForbidden, jsonapi.ErrorBody("maintenance mode is switched from the bridges' own NATS account only"))
		return
	}
	b.enqueue(req, func() {
		defer b.gate.Done()
		enabled, err := jsonapi.DecodeMaintenance(req.Data())
		status, out := b.keeper.ServeMaintenance(context.Background(), enabled, err)
		respondNATS(b.cfg.NATS, req, status, out)
	})
}
