package bridge

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
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
	if _, err := checkName(-1, "queue", field{set: true, str: true, value: *req.Queue}, true, 1); err != nil {
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
	ans := configureAnswer{Queue: q.Name, Tenant: uuid.UUID(q.Tenant).String(), Namespace: q.Namespace, Task: q.Task, Options: q.Options}
	out, _ := json.Marshal(ans)
	b.broadcastQueue(out)
	return http.StatusOK, out
}

// Queue settings are cached for QueueCacheTTL; a change is broadcast on
// <prefix>.v1.queue.changed so that peers drop their cached copy at once
// rather than, say, writing plaintext to a queue that was just switched to
// encryption for the rest of their TTL.

func (b *Bridge) queueChangedSubject() string { return b.cfg.Prefix + ".v1.queue.changed" }

func (b *Bridge) broadcastQueue(answer []byte) {
	if b.cfg.NATS == nil {
		return
	}
	msg := &nats.Msg{Subject: b.queueChangedSubject(), Data: answer, Header: nats.Header{originHeader: []string{b.id}}}
	if err := b.cfg.NATS.PublishMsg(msg); err != nil {
		b.cfg.Logger.Warn().Str("target", "bridge").Err(err).Msg("queue settings broadcast failed; peers keep their copy for up to the cache TTL")
	}
}

// onQueueChanged takes a peer's new queue settings into the cache.
func (b *Bridge) onQueueChanged(m *nats.Msg) {
	if m.Header.Get(originHeader) == b.id {
		return
	}
	var a configureAnswer
	if json.Unmarshal(m.Data, &a) != nil {
		return
	}
	tenant, err := uuid.Parse(a.Tenant)
	if err != nil {
		return
	}
	b.queues.put(queueKey{tenant, a.Queue}, a.Options)
	b.queueSettings.Add(1)
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
