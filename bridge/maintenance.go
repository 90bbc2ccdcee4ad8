package bridge

import (
	"context"
	"net/http"

	"github.com/nats-io/nats.go/micro"
	"github.com/queenbridge/queenbridge/auth"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
)

// Maintenance mode is read and switched by durability (ServeMaintenance);
// here are its transports.

func (b *Bridge) httpMaintenance(w http.ResponseWriter, r *http.Request, _ tenancy.TenantID) {
	var body []byte
	if r.Method == http.MethodPost {
		var done func()
		var ok bool
		if body, done, ok = b.body(w, r); !ok {
			return
		}
		defer done()
	}
	enabled, err := jsonapi.DecodeMaintenance(body)
	status, out := b.keeper.ServeMaintenance(r.Context(), enabled, err)
	writeJSON(w, status, out)
}

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
