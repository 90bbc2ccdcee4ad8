package bridge

import (
	"mime"
	"net/http"
	"strings"

	"github.com/queenbridge/queenbridge/auth"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
)

// tenantHandler serves a request on behalf of a tenant.
type tenantHandler func(w http.ResponseWriter, r *http.Request, tenant tenancy.TenantID)

// guard admits a request to h: with tokens configured, only with a valid
// bearer token (401) whose role may do a (403); a POST only with a JSON
// body (415), so that a web page cannot send one cross-site (a browser
// sends application/json only after a CORS preflight, which this server
// never grants). Without tokens every request acts for the default tenant.
func (b *Bridge) guard(a auth.Action, h tenantHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant, status, msg := b.admit(a, r.Method, r.Header.Get("Authorization"), r.Header.Get("Content-Type"))
		if status != 0 {
			b.refuse(w, a, status, msg)
			return
		}
		h(w, r, tenant)
	})
}

// admit is guard's decision on a request's method, Authorization and
// Content-Type: the tenant it acts for, or the status and message of its
// refusal (status 0: admitted).
func (b *Bridge) admit(a auth.Action, method, authorization, contentType string) (tenant tenancy.TenantID, status int, msg string) {
	p := auth.Principal{Role: auth.RoleAdmin}
	if b.tokens.Enabled() {
		var ok bool
		tok, bearer := strings.CutPrefix(authorization, "Bearer ")
		if bearer {
			p, ok = b.tokens.Lookup(strings.TrimSpace(tok))
		}
		if !ok {
			return p.Tenant, http.StatusUnauthorized, "a valid Authorization: Bearer token is required"
		}
		if !p.May(a) {
			return p.Tenant, http.StatusForbidden, "this token may not " + actionText[a]
		}
	}
	if method == http.MethodPost && contentType != "application/json" && !isJSONMediaType(contentType) {
		return p.Tenant, http.StatusUnsupportedMediaType, "Content-Type must be application/json"
	}
	return p.Tenant, 0, ""
}

// refuse answers a request that guard turned away; a push still counts as
// received.
func (b *Bridge) refuse(w http.ResponseWriter, a auth.Action, status int, msg string) {
	if a == auth.ActionPush {
		b.metrics.Request("http")
	}
	writeJSON(w, status, jsonapi.AppendError(nil, msg))
}

var actionText = map[auth.Action]string{
	auth.ActionPush:      "push",
	auth.ActionRead:      "read messages",
	auth.ActionConfigure: "configure queues",
	auth.ActionMetrics:   "read metrics",
	auth.ActionAdmin:     "use an admin route (admin tokens only)",
}

// isJSONMediaType reports whether a Content-Type with parameters (a
// charset) is application/json; the bare form is checked before, without
// parsing.
func isJSONMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}
