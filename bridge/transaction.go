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

func (b *Bridge) httpTransaction(ctx context.Context, tenant tenancy.TenantID, _ *http.Request, body []byte) (int, []byte) {
	ops, err := jsonapi.DecodeTransaction(body, b.cfg.MaxTxnOperations)
	return b.consumer.ServeTransaction(ctx, tenant, ops, err)
}

// natsTransaction serves <prefix>.v1.transaction (and, in the
// single-account mode, <prefix>.v1.transaction.<tenant-uuid>) on the
// worker pool: it waits on the database.
func (b *Bridge) natsTransaction(req micro.Request) {
	if tenant, ok := b.natsBounded(req, b.cfg.Prefix+".v1.transaction"); ok {
		b.enqueue(req, func() {
			defer b.gate.Done()
			ops, err := jsonapi.DecodeTransaction(req.Data(), b.cfg.MaxTxnOperations)
			status, out := b.consumer.ServeTransaction(context.Background(), tenant, ops, err)
			respondNATS(b.cfg.NATS, req, status, out)
		})
	}
}
