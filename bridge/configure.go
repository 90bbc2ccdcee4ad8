package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/queues"
)

type configureRequest struct {
	Queue     *string                    `json:"queue"`
	Namespace *string                    `json:"namespace"`
	Task      *string                    `json:"task"`
	Options   map[string]json.RawMessage `json:"options"`
}

// configure decodes and checks a configure request and hands it to the queue
// settings, which store, cache and broadcast it; options left out keep their
// value.
func (b *Bridge) configure(ctx context.Context, tenant [16]byte, body []byte) (int, []byte) {
	if b.stopping.Load() {
		return http.StatusServiceUnavailable, jsonapi.ErrorBody(errStopping)
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
	// The namespace and task are the name's first two dot-separated parts;
	// a body that says otherwise is refused rather than quietly overruled.
	parts := strings.SplitN(*req.Queue, ".", 3)
	derived := map[string]string{"namespace": parts[0], "task": ""}
	if len(parts) > 1 {
		derived["task"] = parts[1]
	}
	for name, given := range map[string]*string{"namespace": req.Namespace, "task": req.Task} {
		if given != nil && *given != "" && *given != derived[name] {
			return http.StatusBadRequest, jsonapi.ErrorBody(fmt.Sprintf("%s %q does not match queue %q: this service takes the %s from the queue name (%q)",
				name, *given, *req.Queue, name, derived[name]))
		}
	}
	upd, err := queueUpdate(req.Options)
	if err != nil {
		return http.StatusBadRequest, jsonapi.ErrorBody(err.Error())
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

// queueUpdate splits a configure request's options into the ones this
// service acts on (typed and checked) and the others, kept as sent.
func queueUpdate(opts map[string]json.RawMessage) (pgwire.QueueUpdate, error) {
	var upd pgwire.QueueUpdate
	for k, v := range opts {
		var err error
		switch k {
		case "encryptionEnabled":
			err = json.Unmarshal(v, &upd.EncryptionEnabled)
		case "dedupWindowSeconds":
			err = json.Unmarshal(v, &upd.DedupWindowSeconds)
		case "retentionSeconds":
			err = json.Unmarshal(v, &upd.RetentionSeconds)
		default:
			if upd.Other == nil {
				upd.Other = map[string]json.RawMessage{}
			}
			upd.Other[k] = v
		}
		if err != nil {
			return upd, fmt.Errorf("options.%s: %v", k, err)
		}
	}
	return upd, nil
}
