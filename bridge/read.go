package bridge

import (
	"context"
	"net/http"

	"github.com/nats-io/nats.go/micro"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/push"
	"github.com/queenbridge/queenbridge/readside"
)

func (b *Bridge) httpMessages(w http.ResponseWriter, r *http.Request, tenant tenancy.TenantID) {
	if q := r.URL.Query(); readside.IsMessageList(q) { // Queen's message list (docs/admin-messages.md)
		status, out := b.messages.ServeMessageList(r.Context(), tenant, q)
		writeJSON(w, status, out)
		return
	}
	req, err := jsonapi.ParseFetchQuery(r.URL.Query().Get)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, jsonapi.AppendError(nil, err.Error()))
		return
	}
	if req.WaitMs > 0 { // a read that may park takes a slot, as over NATS
		if !b.takeParkSlot(w) {
			return
		}
		defer b.releaseParkSlot()
	}
	status, out := b.reads.ServeFetch(r.Context(), tenant, req, b.queues)
	writeJSON(w, status, out)
}

// natsFetch: a parked read may wait for minutes, so it takes no worker.
func (b *Bridge) natsFetch(req micro.Request) {
	natsParkable(b, req, jsonapi.DecodeFetch, func(ctx context.Context, tenant tenancy.TenantID, r jsonapi.FetchRequest) (int, []byte) {
		b.natsFetchBound(&r)
		return b.fitNATS("fetch")(b.reads.ServeFetch(ctx, tenant, r, b.queues))
	})
}

// natsParkable serves a NATS request that may park (a fetch, a pop): the
// body decoded by decode, then run on a goroutine of its own holding one of the
// Config.MaxParked slots. A 204 is answered as an empty body.
func natsParkable[R any](b *Bridge, req micro.Request, decode func([]byte) (R, error), run func(context.Context, tenancy.TenantID, R) (int, []byte)) {
	tenant, status, err := b.natsTenant(req, "")
	if err != nil {
		respondNATS(b.cfg.NATS, req, status, jsonapi.AppendError(nil, err.Error()))
		return
	}
	r, err := decode(req.Data())
	if err != nil {
		respondNATS(b.cfg.NATS, req, http.StatusBadRequest, jsonapi.AppendError(nil, err.Error()))
		return
	}
	if !b.gate.Admit() {
		respondNATS(b.cfg.NATS, req, http.StatusServiceUnavailable, jsonapi.AppendError(nil, push.ErrStopping))
		return
	}
	select {
	case b.parkSlots <- struct{}{}:
	default:
		b.gate.Done()
		respondNATS(b.cfg.NATS, req, http.StatusServiceUnavailable, jsonapi.AppendError(nil, "too many parked reads"))
		return
	}
	go func() {
		defer func() { <-b.parkSlots; b.gate.Done() }()
		status, out := run(context.Background(), tenant, r)
		if status == http.StatusNoContent {
			status = http.StatusOK
		}
		respondNATS(b.cfg.NATS, req, status, out)
	}()
}

// takeParkSlot takes one of the Config.MaxParked slots for an HTTP
// request that may park, or answers 503 and reports false.
func (b *Bridge) takeParkSlot(w http.ResponseWriter) bool {
	select {
	case b.parkSlots <- struct{}{}:
		return true
	default:
		writeJSON(w, http.StatusServiceUnavailable, jsonapi.AppendError(nil, "too many parked reads"))
		return false
	}
}

// releaseParkSlot gives back a slot takeParkSlot took.
func (b *Bridge) releaseParkSlot() { <-b.parkSlots }
