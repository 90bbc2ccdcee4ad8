package bridge

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/nats-io/nats.go/micro"
	"github.com/queenbridge/queenbridge/internal/every"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
)

// A NATS answer is one NATS message: never more than the connection's
// max_payload, which nats-server would refuse (the requester would wait for
// its deadline and hear nothing). A pop's claim is bounded to it and a
// message larger than it is refused by the consume room, which hands the
// claim back (consume.ErrTooLarge); a read's page is bounded to it; any
// other answer that would pass it (a read of one message larger than it, a
// page of dead letters) is refused here with an error that says so.

// natsPopBound is the bound of a pop's answer over NATS: the connection's
// largest message, less room for the headers.
func (b *Bridge) natsPopBound() int64 {
	return max(b.cfg.NATS.MaxPayload()-16<<10, 64<<10)
}

// fetchMessageRoom is what a read's page adds to each message's payload
// (offset, ids, time, keys), for the page's bound over NATS.
const fetchMessageRoom = 512

// natsFetchBound lowers a read's maxBytes so that its page fits one NATS
// message; a read that names none gets the default or the bound, the
// smaller. Values Validate refuses are left for it to name.
func (b *Bridge) natsFetchBound(r *jsonapi.FetchRequest) {
	limit := int64(r.Limit)
	if limit <= 0 {
		limit = 100 // Validate's default
	}
	room := max(b.natsPopBound()-limit*fetchMessageRoom, 1)
	switch {
	case r.MaxBytes == 0:
		r.MaxBytes = min(jsonapi.DefaultReadBytes, room)
	case r.MaxBytes > room && r.MaxBytes <= jsonapi.MaxReadBytes:
		r.MaxBytes = room
	}
}

// tooLargeLog limits the warning of NATS answers refused for their size:
// a consumer that pops the same message in a loop would repeat it.
var tooLargeLog = every.New(10 * time.Second)

// fitNATS(what)(status, body) is what goes back over NATS for an answer
// of what (a subject's call): the answer itself, or, when it would pass
// max_payload, a 413 that names its size, the bound and the HTTP route to
// use. A pop's own 413 is logged here too.
func (b *Bridge) fitNATS(what string) func(int, []byte) (int, []byte) {
	return func(status int, body []byte) (int, []byte) { return b.fitAnswer(what, status, body) }
}

func (b *Bridge) fitAnswer(what string, status int, body []byte) (int, []byte) {
	if limit := b.cfg.NATS.MaxPayload(); int64(len(body)) > limit {
		b.natsTooLarge.Add(1)
		status = http.StatusRequestEntityTooLarge
		body = jsonapi.AppendError(nil, fmt.Sprintf("%s answer of %d bytes is larger than the %d bytes a NATS message carries here (max_payload): %s",
			what, len(body), limit, overHTTP[what]))
	}
	if status == http.StatusRequestEntityTooLarge && tooLargeLog.Allow() {
		b.cfg.Logger.Warn().Str("target", "bridge").Str("call", what).Str("error", jsonapi.DecodeError(body)).
			Msg("a NATS answer larger than max_payload was refused (counted in queen_nats_answers_too_large_total and queen_consumer_pops_too_large_total)")
	}
	return status, body
}

// overHTTP says where a NATS call's answer that does not fit is had.
var overHTTP = map[string]string{
	"pop":   "pop it over HTTP (GET /api/v1/pop/queue/{queue})",
	"fetch": "read it over HTTP (GET /api/v1/messages), or with a smaller maxBytes or limit",
	"dlq":   "list them over HTTP (GET /api/v1/dlq), or with a smaller limit",
}

// natsPopCancel: <prefix>.v1.pop.cancel, {"requestId"}, heard by every
// bridge (no queue group: the pop went to one of them). The bridge that has
// the pop ends it, hands back what it claimed, and answers
// {"cancelled":true}; the others answer nothing, and remember the cancel
// for a pop that has not arrived yet.
func (b *Bridge) natsPopCancel(req micro.Request) {
	tenant, status, err := b.natsTenant(req, "")
	if err != nil {
		respondNATS(b.cfg.NATS, req, status, jsonapi.AppendError(nil, err.Error()))
		return
	}
	id, err := jsonapi.DecodePopCancel(req.Data())
	if err != nil {
		respondNATS(b.cfg.NATS, req, http.StatusBadRequest, jsonapi.AppendError(nil, err.Error()))
		return
	}
	b.enqueue(req, func() {
		defer b.gate.Done()
		b.cancelPop(req, tenant, id)
	})
}

func (b *Bridge) cancelPop(req micro.Request, tenant tenancy.TenantID, id string) {
	known, err := b.consumer.CancelPop(context.Background(), tenant, id)
	switch {
	case err != nil:
		respondNATS(b.cfg.NATS, req, http.StatusInternalServerError, jsonapi.AppendError(nil, err.Error()))
	case known:
		respondNATS(b.cfg.NATS, req, http.StatusOK, []byte(`{"cancelled":true}`))
	}
}
