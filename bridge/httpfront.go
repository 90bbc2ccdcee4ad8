package bridge

import (
	"context"
	"net/http"
	"slices"

	"github.com/queenbridge/queenbridge/admin"
	"github.com/queenbridge/queenbridge/auth"
	"github.com/queenbridge/queenbridge/console/web"
	"github.com/queenbridge/queenbridge/internal/httpserve"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
)

func (b *Bridge) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /api/v1/push", b.guard(auth.ActionPush, b.httpPush))
	mux.Handle("POST /api/v1/configure", b.guard(auth.ActionConfigure, b.withBody(b.configure)))
	mux.Handle("GET /api/v1/messages", b.guard(auth.ActionRead, b.httpMessages))
	mux.HandleFunc("GET /health", b.httpHealth)
	// Queen's consumer API (consume.go).
	mux.Handle("GET /api/v1/pop/queue/{queue}", b.guard(auth.ActionRead, b.httpPop))
	mux.Handle("GET /api/v1/pop/queue/{queue}/partition/{partition}", b.guard(auth.ActionRead, b.httpPop))
	mux.Handle("POST /api/v1/ack", b.guard(auth.ActionRead, b.httpAck(false)))
	mux.Handle("POST /api/v1/ack/batch", b.guard(auth.ActionRead, b.httpAck(true)))
	mux.Handle("POST /api/v1/lease/{leaseId}/extend", b.guard(auth.ActionRead, b.httpExtend()))
	for _, rt := range b.roomRoutes() {
		a := auth.ActionRead
		if rt.Admin {
			a = auth.ActionAdmin
		}
		mux.Handle(rt.Method+" "+rt.Pattern, b.guard(a, b.withBody(func(ctx context.Context, tenant tenancy.TenantID, r *http.Request, body []byte) (int, []byte) {
			return rt.Serve(ctx, tenant, admin.Request{Path: r.PathValue, Query: r.URL.Query(), Body: body})
		})))
	}
	// Queen's transactions: pushes and acks in one call (transaction.go).
	mux.Handle("POST /api/v1/transaction", b.guard(auth.ActionPush, b.withBody(b.transaction)))
	// Queen's Streams SDK: registrations, state reads, cycles (streams.go).
	mux.Handle("POST /streams/v1/queries", b.guard(auth.ActionPush, b.withBody(b.streamQuery)))
	mux.Handle("POST /streams/v1/state/get", b.guard(auth.ActionRead, b.withBody(b.streamState)))
	mux.Handle("POST /streams/v1/cycle", b.guard(auth.ActionPush, b.withBody(b.streamCycle)))
	console := web.New(web.Config{Tokens: b.tokens.Enabled()}) // docs/console.md
	for _, p := range []string{"GET /{$}", "GET /console", "GET /console/"} {
		mux.Handle(p, console)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, jsonapi.AppendError(nil, "no route "+r.Method+" "+r.URL.Path))
	})
	prom := b.metrics.Handler()
	scrape := b.guard(auth.ActionMetrics, func(w http.ResponseWriter, r *http.Request, _ tenancy.TenantID) {
		prom.ServeHTTP(w, r)
	})
	for _, p := range metricsPaths {
		mux.Handle(p, scrape)
	}
	return httpserve.LoopbackHosts(mux, b.loopbackOnly(), notLoopback)
}

// metricsPaths serve the Prometheus text: /metrics, where a scraper looks
// by default, and /metrics/prometheus, Queen's path, which existing
// scrape configurations name.
var metricsPaths = []string{"GET /metrics", "GET /metrics/prometheus"}

// loopbackOnly: without tokens, a listener on a loopback address answers
// only requests to it that no page of another site sent (DNS rebinding:
// docs/security.md).
func (b *Bridge) loopbackOnly() bool {
	return !b.tokens.Enabled() && httpserve.LoopbackHost(b.cfg.HTTPAddr)
}

var notLoopback = jsonapi.AppendError(nil, "without tokens this service answers only requests to localhost or a loopback address that no page of another site sent; configure tokens (QUEEN_HTTP_TOKENS) for more")

// leanPush is POST /api/v1/push as the listener serves it itself
// (httpserve.LeanRoute, docs/request-path.md): the checks of the handler
// net/http serves it with, on the head, then the same push.
func (b *Bridge) leanPush() httpserve.LeanRoute {
	refuse := func(status int, msg string) []byte {
		b.metrics.Request("http")
		return jsonapi.AppendError(nil, msg)
	}
	return httpserve.LeanRoute{Method: http.MethodPost, Path: "/api/v1/push",
		MaxBody: min(b.cfg.MaxBodyBytes, 1<<20), Budget: b.budget, BudgetWait: b.cfg.BudgetWait, BodyTimeout: b.cfg.BodyTimeout,
		Admit: func(h *httpserve.Head) (int, []byte) {
			if b.loopbackOnly() && httpserve.NotLoopback(h.Host, h.SecFetchSite) {
				return http.StatusForbidden, notLoopback
			}
			if _, status, msg := b.admit(auth.ActionPush, http.MethodPost, h.Authorization, h.ContentType); status != 0 {
				return status, refuse(status, msg)
			}
			return 0, nil
		},
		Refused: refuse,
		Serve: func(ctx context.Context, h *httpserve.Head, body []byte) (int, []byte) {
			// Admitted: the same head yields the same tenant.
			tenant, _, _ := b.admit(auth.ActionPush, http.MethodPost, h.Authorization, h.ContentType)
			return b.push(ctx, tenant, body)
		}}
}

// roomRoutes are the rooms' route tables: Queen's admin routes (docs/admin.md)
// and maintenance; its message routes (docs/admin-messages.md); the dead
// letters (consume); the web console's own.
func (b *Bridge) roomRoutes() []admin.Route {
	return slices.Concat(b.admin.Routes(), b.messages.Routes(), b.consumer.Routes(), b.console.Routes())
}

var writeJSON = httpserve.WriteJSON

// body reads the body; on failure it has answered already and reports
// false. done gives the body's bytes back to the budget: call it once the
// request is answered.
func (b *Bridge) body(w http.ResponseWriter, r *http.Request) (body []byte, done func(), ok bool) {
	body, taken, status, err := httpserve.ReadBody(w, r, httpserve.BodyLimits{MaxBytes: b.cfg.MaxBodyBytes, Timeout: b.cfg.BodyTimeout,
		BudgetWait: b.cfg.BudgetWait}, b.budget)
	done = func() { b.budget.Give(taken) }
	if err != nil {
		done()
		writeJSON(w, status, jsonapi.AppendError(nil, err.Error()))
		return nil, nil, false
	}
	return body, done, true
}

func (b *Bridge) httpPush(w http.ResponseWriter, r *http.Request, tenant tenancy.TenantID) {
	body, done, ok := b.body(w, r)
	if !ok {
		b.metrics.Request("http")
		return
	}
	defer done()
	status, out := b.push(r.Context(), tenant, body)
	writeJSON(w, status, out)
}

// push is an HTTP push's answer: the body decoded, the call, and the wait
// for its verdicts.
func (b *Bridge) push(ctx context.Context, tenant tenancy.TenantID, body []byte) (int, []byte) {
	type answer struct {
		status int
		body   []byte
	}
	ch := make(chan answer, 1)
	b.pushBody(ctx, "http", tenant, body, func(s int, out []byte) { ch <- answer{s, out} })
	a := <-ch
	return a.status, a.body
}

// withBody serves a request whose body is read whole first (bounded, from
// the in-flight budget, given back once answered) and whose answer is
// JSON.
func (b *Bridge) withBody(fn func(ctx context.Context, tenant tenancy.TenantID, r *http.Request, body []byte) (int, []byte)) tenantHandler {
	return func(w http.ResponseWriter, r *http.Request, tenant tenancy.TenantID) {
		body, done, ok := b.body(w, r)
		if !ok {
			return
		}
		defer done()
		status, out := fn(r.Context(), tenant, r, body)
		writeJSON(w, status, out)
	}
}

func (b *Bridge) httpHealth(w http.ResponseWriter, r *http.Request) {
	status, out := b.keeper.ServeHealth(r.Context())
	out = jsonapi.AppendHealthBehind(nil, out, b.relay.Behind())
	writeJSON(w, status, out)
}
