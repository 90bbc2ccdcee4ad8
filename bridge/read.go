package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/micro"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/readside"
	"github.com/queenbridge/queenbridge/segment"
)

// fetch validates a read and runs it on the read side, which parks it until
// there is something to read or the wait ends.
func (b *Bridge) fetch(ctx context.Context, tenant [16]byte, req jsonapi.FetchRequest) (int, []byte) {
	if err := req.Validate(); err != nil {
		return http.StatusBadRequest, jsonapi.ErrorBody(err.Error())
	}
	msgs, err := b.reads.Fetch(ctx, tenant, readside.FetchRequest{Queue: req.Queue, Partition: req.Partition,
		From: req.From, Limit: req.Limit, MaxBytes: req.MaxBytes, Wait: time.Duration(req.WaitMs) * time.Millisecond})
	if err != nil {
		return http.StatusServiceUnavailable, jsonapi.ErrorBody(err.Error())
	}
	return b.renderMessages(tenant, req, msgs)
}

// renderMessages writes {"messages": [...], "next": n}; payloads go out as
// stored (decrypted first for encrypted queues), never re-encoded.
func (b *Bridge) renderMessages(tenant [16]byte, req jsonapi.FetchRequest, msgs []pgwire.Message) (int, []byte) {
	out := make([]byte, 0, 64+len(msgs)*256)
	out = append(out, `{"messages":[`...)
	next := req.From
	for i, m := range msgs {
		payload := m.Frame.Payload
		if m.Frame.Flags&segment.FlagEncrypted != 0 {
			if !b.queues.HasKey() {
				return http.StatusInternalServerError, jsonapi.ErrorBody(fmt.Sprintf("queue %q holds encrypted messages and no QUEEN_ENCRYPTION_KEY is configured", req.Queue))
			}
			plain, err := b.queues.Open(tenant, req.Queue, req.Partition, m.Frame.Flags, payload)
			if err != nil {
				return http.StatusInternalServerError, jsonapi.ErrorBody(fmt.Sprintf("message at offset %d: %v", m.Offset, err))
			}
			payload = plain
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = jsonapi.AppendMessage(out, m.Offset, m.Frame.ID, m.Frame.TransactionID, m.Frame.TraceID, payload, m.Frame.Flags&segment.FlagBase64 != 0, m.CreatedAt)
		next = m.Offset + 1
	}
	out = append(out, `],"next":`...)
	out = strconv.AppendInt(out, next, 10)
	return http.StatusOK, append(out, '}')
}

func (b *Bridge) httpMessages(w http.ResponseWriter, r *http.Request, tenant [16]byte) {
	q := r.URL.Query()
	req := jsonapi.FetchRequest{Queue: q.Get("queue"), Partition: q.Get("partition")}
	var from, limit, wait, maxBytes int64
	for _, p := range []struct {
		name string
		dst  *int64
	}{{"from", &from}, {"limit", &limit}, {"waitMs", &wait}, {"maxBytes", &maxBytes}} {
		if v := q.Get(p.name); v != "" {
			n, err := strconv.ParseInt(v, 10, 32)
			if p.name == "from" || p.name == "maxBytes" {
				n, err = strconv.ParseInt(v, 10, 64)
			}
			if err != nil {
				writeJSON(w, http.StatusBadRequest, jsonapi.ErrorBody(p.name+" must be an integer"))
				return
			}
			*p.dst = n
		}
	}
	req.From, req.Limit, req.WaitMs, req.MaxBytes = from, int(limit), int(wait), maxBytes
	if req.WaitMs > 0 { // a read that may park takes a slot, as over NATS
		if !b.takeParkSlot(w) {
			return
		}
		defer b.releaseParkSlot()
	}
	status, out := b.fetch(r.Context(), tenant, req)
	writeJSON(w, status, out)
}

// natsFetch: a parked read may wait for minutes, so it does not take a push
// worker; it runs on a goroutine of its own, at most Config.MaxParkedFetches
// at once.
func (b *Bridge) natsFetch(req micro.Request) {
	natsParkable(b, req, "fetch", b.fetch)
}

// natsParkable serves a NATS request that may park (a fetch, a pop): the
// body decoded as R, then run on a goroutine of its own holding one of the
// Config.MaxParkedFetches slots. A 204 is answered as an empty body.
func natsParkable[R any](b *Bridge, req micro.Request, what string, run func(context.Context, [16]byte, R) (int, []byte)) {
	tenant, status, err := b.natsTenant(req, false)
	if err != nil {
		respondNATS(b.cfg.NATS, req, status, jsonapi.ErrorBody(err.Error()))
		return
	}
	var r R
	if err := json.Unmarshal(req.Data(), &r); err != nil {
		respondNATS(b.cfg.NATS, req, http.StatusBadRequest, jsonapi.ErrorBody(what+" body: "+err.Error()))
		return
	}
	b.gate.RLock()
	defer b.gate.RUnlock()
	if b.stopping.Load() {
		respondNATS(b.cfg.NATS, req, http.StatusServiceUnavailable, jsonapi.ErrorBody(errStopping))
		return
	}
	select {
	case b.fetchSlots <- struct{}{}:
	default:
		respondNATS(b.cfg.NATS, req, http.StatusServiceUnavailable, jsonapi.ErrorBody("too many parked reads"))
		return
	}
	b.calls.Add(1)
	go func() {
		defer func() { <-b.fetchSlots; b.calls.Done() }()
		status, out := run(context.Background(), tenant, r)
		if status == http.StatusNoContent {
			status = http.StatusOK
		}
		respondNATS(b.cfg.NATS, req, status, out)
	}()
}

// takeParkSlot takes one of the Config.MaxParkedFetches slots for an HTTP
// request that may park, or answers 503 and reports false.
func (b *Bridge) takeParkSlot(w http.ResponseWriter) bool {
	select {
	case b.fetchSlots <- struct{}{}:
		return true
	default:
		writeJSON(w, http.StatusServiceUnavailable, jsonapi.ErrorBody("too many parked reads"))
		return false
	}
}

// releaseParkSlot gives back a slot takeParkSlot took.
func (b *Bridge) releaseParkSlot() { <-b.fetchSlots }
