package queues

import (
	"context"
	"errors"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/storage"
)

// ServeConfigure runs a configure request as the transports serve it
// (jsonapi.DecodeConfigure decoded it): the queue's settings stored,
// cached and broadcast, answered with what they are now.
func (s *Settings) ServeConfigure(ctx context.Context, tenant tenancy.TenantID, req jsonapi.ConfigureRequest) (int, []byte) {
	ch, err := s.Configure(ctx, tenant, req.Queue, storage.QueueUpdate{EncryptionEnabled: req.EncryptionEnabled,
		DedupWindowSeconds: req.DedupWindowSeconds, RetentionSeconds: req.RetentionSeconds, Other: req.Other})
	switch {
	case errors.Is(err, ErrNoKey):
		return jsonapi.StatusBadRequest, jsonapi.AppendError(nil, err.Error())
	case err != nil:
		return jsonapi.StatusInternalServerError, jsonapi.AppendError(nil, err.Error())
	}
	out, err := jsonapi.AppendQueueConfigured(nil, &ch)
	if err != nil {
		return jsonapi.StatusInternalServerError, jsonapi.AppendError(nil, err.Error())
	}
	return jsonapi.StatusOK, out
}
