package bridge

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/nats-io/nats.go/micro"
	"github.com/queenbridge/queenbridge/auth"
	"github.com/queenbridge/queenbridge/jsonapi"
)

// maintenanceAnswer is what both transports answer, with Queen's fields:
// bufferHealthy says whether pushes PostgreSQL cannot take have somewhere
// to go (a spool that is not full).
func (b *Bridge) maintenanceAnswer() []byte {
	st := b.keeper.Stats()
	on, healthy := st.Maintenance, st.SpoolHealthy
	msg := "maintenance mode is off: pushes go to PostgreSQL"
	if on {
		msg = "maintenance mode is on: pushes are buffered in the spool and drained when it ends"
	}
	if !healthy {
		msg += "; the spool cannot take more (none configured, or full)"
	}
	out, _ := json.Marshal(map[string]any{"maintenanceMode": on, "bufferedMessages": st.SpoolRecords,
		"bufferHealthy": healthy, "message": msg})
	return out
}

// maintenanceRequest handles a read ({} or empty) or a set ({"enabled":
// bool}); durability stores, applies and broadcasts a set.
func (b *Bridge) maintenanceRequest(ctx context.Context, body []byte) (int, []byte) {
	var req struct {
		Enabled *bool `json:"enabled"`
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			return http.StatusBadRequest, jsonapi.ErrorBody("maintenance body: " + err.Error())
		}
	}
	if req.Enabled != nil {
		if err := b.keeper.SetMaintenance(ctx, *req.Enabled); err != nil {
			return http.StatusServiceUnavailable, jsonapi.ErrorBody(err.Error())
		}
	}
	return http.StatusOK, b.maintenanceAnswer()
}

func (b *Bridge) httpMaintenance(w http.ResponseWriter, r *http.Request, _ [16]byte) {
	var body []byte
	if r.Method == http.MethodPost {
		var done func()
		var ok bool
		if body, done, ok = b.body(w, r); !ok {
			return
		}
		defer done()
	}
	status, out := b.maintenanceRequest(r.Context(), body)
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
		defer b.calls.Done()
		status, out := b.maintenanceRequest(context.Background(), req.Data())
		respondNATS(b.cfg.NATS, req, status, out)
	})
}
