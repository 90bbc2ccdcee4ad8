package bridge

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/pgwire"
)

type configureRequest struct {
	Queue   *string `json:"queue"`
	Options *struct {
		EncryptionEnabled  *bool  `json:"encryptionEnabled"`
		DedupWindowSeconds *int32 `json:"dedupWindowSeconds"`
		RetentionSeconds   *int32 `json:"retentionSeconds"`
	} `json:"options"`
}

type configureAnswer struct {
	Queue     string              `json:"queue"`
	Tenant    string              `json:"tenant"`
	Namespace string              `json:"namespace"`
	Task      string              `json:"task"`
	Options   pgwire.QueueOptions `json:"options"`
}

// configure creates or updates a queue; options left out keep their value.
func (b *Bridge) configure(ctx context.Context, tenant [16]byte, body []byte) (int, []byte) {
	if b.stopping.Load() {
		return http.StatusServiceUnavailable, errorBody("the bridge is shutting down")
	}
	var req configureRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return http.StatusBadRequest, errorBody("configure body: " + err.Error())
	}
	if req.Queue == nil {
		return http.StatusBadRequest, errorBody("queue is required")
	}
	if _, err := checkName("queue", field{set: true, str: true, value: *req.Queue}, true, 1); err != nil {
		return http.StatusBadRequest, errorBody(err.Error())
	}
	var upd pgwire.QueueUpdate
	if o := req.Options; o != nil {
		upd = pgwire.QueueUpdate{EncryptionEnabled: o.EncryptionEnabled, DedupWindowSeconds: o.DedupWindowSeconds, RetentionSeconds: o.RetentionSeconds}
	}
	if upd.DedupWindowSeconds != nil && *upd.DedupWindowSeconds < 0 {
		return http.StatusBadRequest, errorBody("options.dedupWindowSeconds must be >= 0")
	}
	if upd.RetentionSeconds != nil && *upd.RetentionSeconds < 0 {
		return http.StatusBadRequest, errorBody("options.retentionSeconds must be >= 0")
	}
	if upd.EncryptionEnabled != nil && *upd.EncryptionEnabled && b.sealer == nil {
		return http.StatusBadRequest, errorBody("options.encryptionEnabled needs QUEEN_ENCRYPTION_KEY on the bridge")
	}
	q, err := b.cfg.DB.ConfigureQueue(ctx, tenant, *req.Queue, upd)
	if err != nil {
		return http.StatusInternalServerError, errorBody(err.Error())
	}
	b.queues.put(queueKey{tenant, q.Name}, q.Options)
	out, _ := json.Marshal(configureAnswer{Queue: q.Name, Tenant: uuid.UUID(q.Tenant).String(), Namespace: q.Namespace, Task: q.Task, Options: q.Options})
	return http.StatusOK, out
}

// errorMessage extracts msg from {"error": msg}, or "".
func errorMessage(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	return e.Error
}
