package bridge

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/queenbridge/queenbridge/auth"
	"github.com/queenbridge/queenbridge/jsonapi"
)

func (b *Bridge) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /api/v1/push", b.guard(auth.ActionPush, b.httpPush))
	mux.Handle("POST /api/v1/configure", b.guard(auth.ActionConfigure, b.httpConfigure))
	mux.Handle("GET /api/v1/system/maintenance", b.guard(auth.ActionReadMaintenance, b.httpMaintenance))
	mux.Handle("POST /api/v1/system/maintenance", b.guard(auth.ActionSetMaintenance, b.httpMaintenance))
	mux.Handle("GET /api/v1/messages", b.guard(auth.ActionRead, b.httpMessages))
	mux.HandleFunc("GET /health", b.httpHealth)
	scrape := b.metrics.Handler()
	mux.Handle("GET /metrics/prometheus", b.guard(auth.ActionMetrics, func(w http.ResponseWriter, r *http.Request, _ [16]byte) {
		scrape.ServeHTTP(w, r)
	}))
	return mux
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// readBody reads the whole body once, up to the limit.
func (b *Bridge) readBody(w http.ResponseWriter, r *http.Request) ([]byte, int, error) {
	if r.ContentLength > b.cfg.MaxBodyBytes {
		return nil, http.StatusRequestEntityTooLarge, errors.New("body larger than " + strconv.FormatInt(b.cfg.MaxBodyBytes, 10) + " bytes")
	}
	rd := http.MaxBytesReader(w, r.Body, b.cfg.MaxBodyBytes)
	var body []byte
	var err error
	if r.ContentLength > 0 {
		body = make([]byte, r.ContentLength)
		_, err = io.ReadFull(rd, body)
	} else {
		body, err = io.ReadAll(rd)
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, http.StatusRequestEntityTooLarge, errors.New("body larger than " + strconv.FormatInt(b.cfg.MaxBodyBytes, 10) + " bytes")
	case err != nil:
		return nil, http.StatusBadRequest, errors.New("reading the body: " + err.Error())
	}
	return body, 0, nil
}

// body reads the body; on failure it has answered already and reports
// false.
func (b *Bridge) body(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, status, err := b.readBody(w, r)
	if err != nil {
		writeJSON(w, status, jsonapi.ErrorBody(err.Error()))
		return nil, false
	}
	return body, true
}

func (b *Bridge) httpPush(w http.ResponseWriter, r *http.Request, tenant [16]byte) {
	body, ok := b.body(w, r)
	if !ok {
		b.metrics.Request("http")
		return
	}
	type answer struct {
		status int
		body   []byte
	}
	ch := make(chan answer, 1)
	b.push(r.Context(), "http", tenant, body, func(s int, out []byte) { ch <- answer{s, out} })
	a := <-ch
	writeJSON(w, a.status, a.body)
}

func (b *Bridge) httpConfigure(w http.ResponseWriter, r *http.Request, tenant [16]byte) {
	body, ok := b.body(w, r)
	if !ok {
		return
	}
	status, out := b.configure(r.Context(), tenant, body)
	writeJSON(w, status, out)
}

func (b *Bridge) httpHealth(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), time.Second)
	defer cancel()
	pg, nc := "up", "up"
	if err := b.cfg.DB.Ping(ctx); err != nil {
		pg = "down"
	}
	if b.cfg.NATS == nil {
		nc = "disabled"
	} else if !b.cfg.NATS.IsConnected() {
		nc = "down"
	}
	status, word := http.StatusOK, "healthy"
	if pg == "down" || nc == "down" {
		status, word = http.StatusServiceUnavailable, "unhealthy"
	}
	writeJSON(w, status, []byte(`{"status":"`+word+`","postgres":"`+pg+`","nats":"`+nc+`"}`))
}
