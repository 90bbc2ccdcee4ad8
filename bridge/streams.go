package bridge

import (
	"context"
	"net/http"

	"github.com/nats-io/nats.go/micro"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
)

// Queen's Streams SDK (docs/streams.md): the consume room registers
// queries, reads their state and commits their cycles; this file carries
// the three routes over HTTP and NATS.

// streamQuery decodes and serves a registration, over either transport.
func (b *Bridge) streamQuery(ctx context.Context, tenant tenancy.TenantID, _ *http.Request, body []byte) (int, []byte) {
	q, err := jsonapi.DecodeStreamQuery(body)
	if err != nil {
		return badRequest(err)
	}
	return b.consumer.ServeStreamQuery(ctx, tenant, q)
}

// streamState decodes and serves a state read, over either transport.
func (b *Bridge) streamState(ctx context.Context, tenant tenancy.TenantID, _ *http.Request, body []byte) (int, []byte) {
	g, err := jsonapi.DecodeStreamStateGet(body)
	if err != nil {
		return badRequest(err)
	}
	return b.consumer.ServeStreamState(ctx, tenant, g)
}

// streamCycle decodes and commits a cycle, over either transport.
func (b *Bridge) streamCycle(ctx context.Context, tenant tenancy.TenantID, _ *http.Request, body []byte) (int, []byte) {
	c, err := jsonapi.DecodeStreamCycle(body)
	if err != nil {
		return b.badTransaction(err)
	}
	return b.consumer.ServeStreamCycle(ctx, tenant, c)
}

// natsStreams serves <prefix>.v1.streams.queries, .state.get and .cycle
// with serve on the worker pool: they wait on the database.
func (b *Bridge) natsStreams(subject string, serve func(context.Context, tenancy.TenantID, *http.Request, []byte) (int, []byte)) micro.HandlerFunc {
	return func(req micro.Request) {
		if tenant, ok := b.natsBounded(req, subject); ok {
			b.enqueue(req, func() {
				defer b.gate.Done()
				status, out := serve(context.Background(), tenant, nil, req.Data())
				respondNATS(b.cfg.NATS, req, status, out)
			})
		}
	}
}
