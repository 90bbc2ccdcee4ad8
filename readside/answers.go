package readside

import (
	"context"
	"fmt"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/segment"
)

// Payloads turns a stored payload into what its producer sent (decrypting
// those of encrypted queues); *queues.Settings satisfies it.
type Payloads interface {
	Plain(tenant tenancy.TenantID, queue, partition string, flags uint8, stored []byte) ([]byte, error)
}

// ServeFetch validates a read (as jsonapi decoded it), runs it (parking it
// until there is something to read or the wait ends) and renders
// {"messages": [...], "next": n}; payloads go out as stored (decrypted
// first for encrypted queues), never re-encoded.
func (r *Reads) ServeFetch(ctx context.Context, tenant tenancy.TenantID, req jsonapi.FetchRequest, payloads Payloads) (int, []byte) {
	if err := req.Validate(); err != nil {
		return jsonapi.StatusBadRequest, jsonapi.AppendError(nil, err.Error())
	}
	msgs, err := r.Fetch(ctx, tenant, FetchRequest{Queue: req.Queue, Partition: req.Partition,
		From: req.From, Limit: req.Limit, MaxBytes: req.MaxBytes, Wait: time.Duration(req.WaitMs) * time.Millisecond})
	if err != nil {
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, err.Error())
	}
	out := make([]byte, 0, 64+len(msgs)*256)
	out = jsonapi.OpenMessages(out)
	next := req.From
	for i, m := range msgs {
		payload, err := payloads.Plain(tenant, req.Queue, req.Partition, m.Frame.Flags, m.Frame.Payload)
		if err != nil {
			return jsonapi.StatusInternalServerError, jsonapi.AppendError(nil, fmt.Sprintf("message at offset %d: %v", m.Offset, err))
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = jsonapi.AppendMessage(out, m.Offset, m.Frame.ID, m.Frame.TransactionID, m.Frame.TraceID, payload, m.Frame.Flags&segment.FlagBase64 != 0, m.CreatedAt)
		next = m.Offset + 1
	}
	return jsonapi.StatusOK, jsonapi.CloseMessages(out, next)
}
