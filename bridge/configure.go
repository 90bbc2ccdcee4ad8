package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/queues"
)

type configureRequest struct {
	Queue   *string `json:"queue"`
	Options *struct {
		EncryptionEnabled  *bool  `json:"encryptionEnabled"`
		DedupWindowSeconds *int32 `json:"dedupWindowSeconds"`
		RetentionSeconds   *int32 `json:"retentionSeconds"`
	} `json:"options"`
}

// configure decodes and checks a configure request and hands it to the queue
// settings, which store, cache and broadcast it; options left out keep their
// value.
func (b *Bridge) configure(ctx context.Context, tenant [16]byte, body []byte) (int, []byte) {
	if b.stopping.Load() {
		return http.StatusServiceUnavailable, jsonapi.ErrorBody("the bridge is shutting down")
	}
	var req configureRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return http.StatusBadRequest, jsonapi.ErrorBody("configure body: " + err.Error())
	}
	if req.Queue == nil {
		return http.StatusBadRequest, jsonapi.ErrorBody("queue is required")
	}
	if err := jsonapi.CheckName("queue", *req.Queue, true); err != nil {
		return http.StatusBadRequest, jsonapi.ErrorBody(err.Error())
	}
	var upd pgwire.QueueUpdate
	if o := req.Options; o != nil {
		upd = pgwire.QueueUpdate{EncryptionEnabled: o.EncryptionEnabled, DedupWindowSeconds: o.DedupWindowSeconds, RetentionSeconds: o.RetentionSeconds}
	}
	if upd.DedupWindowSeconds != nil && *upd.DedupWindowSeconds < 0 {
		return http.StatusBadRequest, jsonapi.ErrorBody("options.dedupWindowSeconds must be >= 0")
	}
	if upd.RetentionSeconds != nil && *upd.RetentionSeconds < 0 {
		return http.StatusBadRequest, jsonapi.ErrorBody("options.retentionSeconds must be >= 0")
	}
	ch, err := b.queues.Configure(ctx, tenant, *req.Queue, upd)
	switch {
	case errors.Is(err, queues.ErrNoKey):
		return http.StatusBadRequest, jsonapi.ErrorBody(err.Error())
	case err != nil:
		return http.StatusInternalServerError, jsonapi.ErrorBody(err.Error())
	}
	out, _ := json.Marshal(ch)
	return http.StatusOK, out
}
