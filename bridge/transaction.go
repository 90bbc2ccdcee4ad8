package bridge

import (
	"context"
	"net/http"

	"github.com/nats-io/nats.go/micro"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
)

// Queen's transaction wire (docs/transactions.md): the consume
// room runs and answers it; this file carries it over HTTP and NATS.

// transaction decodes and runs a transaction body, over either transport.
func (b *Bridge) transaction(ctx context.Context, tenant tenancy.TenantID, _ *http.Request, body []byte) (int, []byte) {
	ops, err := jsonapi.DecodeTransaction(body, b.cfg.MaxTxnOperations)
	if err != nil {
		return b.badTransaction(err)
	}
	return b.consumer.ServeTransaction(ctx, tenant, ops)
}

// natsTransaction serves <prefix>.v1.transaction (and, in the
// single-account mode, <prefix>.v1.transaction.<tenant-uuid>) on the
// worker pool: it waits on the database.
func (b *Bridge) natsTransaction(req micro.Request) {
	if tenant, ok := b.natsBounded(req, b.cfg.Prefix+".v1.transaction"); ok {
		b.enqueue(req, func() {
			defer b.gate.Done()
			status, out := b.transaction(context.Background(), tenant, nil, req.Data())
			respondNATS(b.cfg.NATS, req, status, out)
		})
	}
}
