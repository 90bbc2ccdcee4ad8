package bridge

import (
	"context"
	"net/http"

	"github.com/nats-io/nats.go/micro"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
)

// Queen's consumer API (docs/consumers.md, docs/api.md) over HTTP and NATS: the consume
// room runs and renders each call; this file carries requests and answers.

func (b *Bridge) httpPop(w http.ResponseWriter, r *http.Request, tenant tenancy.TenantID) {
	req, err := jsonapi.ParsePopQuery(r.URL.Query().Get)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, jsonapi.AppendError(nil, err.Error()))
		return
	}
	req.Queue, req.Partition = r.PathValue("queue"), r.PathValue("partition")
	if req.Wait { // a pop that may park takes a slot, as a parked read does
		if !b.takeParkSlot(w) {
			return
		}
		defer b.releaseParkSlot()
	}
	status, out := b.consumer.ServePop(r.Context(), tenant, req, 0)
	writeAnswer(w, status, out)
}

// writeAnswer writes a JSON answer, or 204 with no body.
func writeAnswer(w http.ResponseWriter, status int, out []byte) {
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	writeJSON(w, status, out)
}

func (b *Bridge) httpAck(batch bool) tenantHandler {
	return b.withBody(func(ctx context.Context, tenant tenancy.TenantID, r *http.Request, body []byte) (int, []byte) {
		acks, err := jsonapi.DecodeAck(body, batch)
		if err != nil {
			return badRequest(err)
		}
		return b.consumer.ServeAck(ctx, tenant, acks)
	})
}

func (b *Bridge) httpExtend() tenantHandler {
	return b.withBody(func(ctx context.Context, tenant tenancy.TenantID, r *http.Request, body []byte) (int, []byte) {
		req, err := jsonapi.DecodeLease(r.PathValue("leaseId"), body)
		if err != nil {
			return badRequest(err)
		}
		return b.consumer.ServeExtend(ctx, tenant, req)
	})
}

// NATS endpoints: <prefix>.v1.pop (the pop's fields as JSON, queue and
// partition among them), <prefix>.v1.ack ({"acknowledgments": [...]} or
// one acknowledgement), <prefix>.v1.lease ({"leaseId", "seconds"}),
// <prefix>.v1.dlq (the dlq query as JSON). 204 is answered as an empty
// body without error headers.

func (b *Bridge) natsPop(req micro.Request) {
	bound := b.natsPopBound()
	natsParkable(b, req, jsonapi.DecodePop, func(ctx context.Context, tenant tenancy.TenantID, pr jsonapi.PopRequest) (int, []byte) {
		return b.fitNATS("pop")(b.consumer.ServePop(ctx, tenant, pr, bound))
	})
}

func (b *Bridge) natsAck(req micro.Request) {
	b.natsWorker(req, func(ctx context.Context, tenant tenancy.TenantID) (int, []byte) {
		acks, err := jsonapi.DecodeAnyAck(req.Data())
		if err != nil {
			return badRequest(err)
		}
		return b.consumer.ServeAck(ctx, tenant, acks)
	})
}

func (b *Bridge) natsLease(req micro.Request) {
	b.natsWorker(req, func(ctx context.Context, tenant tenancy.TenantID) (int, []byte) {
		lr, err := jsonapi.DecodeLease("", req.Data())
		if err != nil {
			return badRequest(err)
		}
		return b.consumer.ServeExtend(ctx, tenant, lr)
	})
}

func (b *Bridge) natsDLQ(req micro.Request) {
	b.natsWorker(req, func(ctx context.Context, tenant tenancy.TenantID) (int, []byte) {
		dr, err := jsonapi.DecodeDeadLetters(req.Data())
		if err != nil {
			return badRequest(err)
		}
		return b.fitNATS("dlq")(b.consumer.ServeDeadLetters(ctx, tenant, dr))
	})
}

// natsWorker runs a request that waits on the database on the worker pool.
func (b *Bridge) natsWorker(req micro.Request, fn func(context.Context, tenancy.TenantID) (int, []byte)) {
	tenant, status, err := b.natsTenant(req, "")
	if err != nil {
		respondNATS(b.cfg.NATS, req, status, jsonapi.AppendError(nil, err.Error()))
		return
	}
	b.enqueue(req, func() {
		defer b.gate.Done()
		status, out := fn(context.Background(), tenant)
		respondNATS(b.cfg.NATS, req, status, out)
	})
}
