package bridge_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// With tokens configured, every route but /health needs a valid token; a
// tenant token may not switch maintenance; and each refusal changes
// nothing.
func TestHTTPRoutesNeedAToken(t *testing.T) {
	tenantA, tenantB := uuid.New(), uuid.New()
	n := newNode(t, nodeOpts{
		tokens: map[string]tenancy.TenantID{"tok-a": tenancy.TenantID(tenantA), "tok-b": tenancy.TenantID(tenantB)},
		admins: map[string]tenancy.TenantID{"tok-admin": tenancy.TenantID(tenantA)},
	})
	push := []byte(items(item("q", "p", "a")))
	maintOn := []byte(`{"enabled":true}`)
	for _, auth := range []struct{ name, header string }{
		{"no token", ""}, {"wrong token", "Bearer tok-c"}, {"not bearer", "Basic dG9rLWE6"}, {"empty bearer", "Bearer "},
	} {
		h := []string{}
		if auth.header != "" {
			h = []string{"Authorization", auth.header}
		}
		for _, c := range []struct {
			method, path string
			body         []byte
		}{
			{"POST", "/api/v1/push", push},
			{"POST", "/api/v1/configure", []byte(`{"queue":"q"}`)},
			{"POST", "/api/v1/system/maintenance", maintOn},
			{"GET", "/api/v1/system/maintenance", nil},
			{"GET", "/api/v1/messages?queue=q&partition=p", nil},
			{"GET", "/metrics/prometheus", nil},
			{"GET", "/metrics", nil},
		} {
			var status int
			var out []byte
			if c.method == "POST" {
				status, out = n.post(c.path, c.body, h...)
			} else {
				status, out = n.get(c.path, h...)
			}
			if status != http.StatusUnauthorized || !strings.Contains(string(out), "Bearer token is required") {
				t.Errorf("%s, %s %s: %d %s, want 401", auth.name, c.method, c.path, status, out)
			}
		}
	}
	if status, _ := n.get("/health"); status != http.StatusOK {
		t.Fatalf("/health without a token: %d", status)
	}
	// A tenant token may neither switch maintenance mode nor read it: both
	// are Queen's ADMIN routes (docs/admin.md).
	if status, out := n.post("/api/v1/system/maintenance", maintOn, "Authorization", "Bearer tok-a"); status != http.StatusForbidden || !strings.Contains(string(out), "admin tokens only") {
		t.Fatalf("tenant token switching maintenance: %d %s", status, out)
	}
	if status, out := n.get("/api/v1/system/maintenance", "Authorization", "Bearer tok-a"); status != http.StatusForbidden || !strings.Contains(string(out), "admin tokens only") {
		t.Fatalf("tenant token reading maintenance: %d %s", status, out)
	}
	if status, out := n.get("/api/v1/system/maintenance", "Authorization", "Bearer tok-admin"); status != http.StatusOK || !strings.Contains(string(out), `"maintenanceMode":false`) {
		t.Fatalf("admin token reading maintenance: %d %s", status, out)
	}
	if c := n.count(`SELECT count(*) FROM queen.queues`); c != 0 {
		t.Fatalf("%d queues created by refused requests", c)
	}
	if c := n.count(`SELECT count(*) FROM queen.system_state WHERE key = 'maintenance' AND (value->>'enabled')::boolean`); c != 0 {
		t.Fatal("a refused request switched maintenance on")
	}
	// An admin token switches it, and back.
	for _, on := range []string{"true", "false"} {
		if status, out := n.post("/api/v1/system/maintenance", []byte(`{"enabled":`+on+`}`), "Authorization", "Bearer tok-admin"); status != http.StatusOK || !strings.Contains(string(out), `"maintenanceMode":`+on) {
			t.Fatalf("admin token, enabled=%s: %d %s", on, status, out)
		}
	}
	// Metrics are readable with any valid token, at /metrics as at
	// /metrics/prometheus, in Prometheus's text format.
	for _, path := range []string{"/metrics/prometheus", "/metrics"} {
		status, out := n.get(path, "Authorization", "Bearer tok-b")
		if status != http.StatusOK || !strings.Contains(string(out), "# TYPE queen_available_published_total counter") {
			t.Fatalf("%s with a token: %d %.200s", path, status, out)
		}
	}
}

// A tenant token acts for its own tenant only: what tenant B reads and
// configures under a queue name is B's queue, never A's.
func TestTenantTokensSeeOnlyTheirTenant(t *testing.T) {
	tenantA, tenantB := uuid.New(), uuid.New()
	n := newNode(t, nodeOpts{tokens: map[string]tenancy.TenantID{"tok-a": tenancy.TenantID(tenantA), "tok-b": tenancy.TenantID(tenantB)}})
	if status, out := n.post("/api/v1/push", []byte(items(item("shared", "p", "a1"))), "Authorization", "Bearer tok-a"); status != http.StatusCreated {
		t.Fatalf("push as A: %d %s", status, out)
	}
	status, out := n.get("/api/v1/messages?queue=shared&partition=p", "Authorization", "Bearer tok-b")
	if status != http.StatusOK || !strings.Contains(string(out), `"messages":[]`) {
		t.Fatalf("B reads A's queue: %d %s", status, out)
	}
	if status, out := n.post("/api/v1/configure", []byte(`{"queue":"shared","options":{"dedupWindowSeconds":0}}`), "Authorization", "Bearer tok-b"); status != http.StatusOK || !strings.Contains(string(out), tenantB.String()) {
		t.Fatalf("configure as B: %d %s", status, out)
	}
	if w := n.count(`SELECT dedup_window_seconds FROM queen.queues WHERE tenant = $1 AND name = 'shared'`, tenantA); w == 0 {
		t.Fatal("B's configure changed A's queue")
	}
	status, out = n.get("/api/v1/messages?queue=shared&partition=p", "Authorization", "Bearer tok-a")
	if status != http.StatusOK || !strings.Contains(string(out), `"offset":1`) {
		t.Fatalf("A reads its queue: %d %s", status, out)
	}
}

// A POST whose body is not declared JSON is refused with 415 and writes
// nothing, with tokens and without.
func TestPostsMustBeJSON(t *testing.T) {
	for _, withTokens := range []bool{false, true} {
		o := nodeOpts{}
		h := []string{}
		if withTokens {
			o.admins = map[string]tenancy.TenantID{"tok-admin": {}}
			h = []string{"Authorization", "Bearer tok-admin"}
		}
		n := newNode(t, o)
		for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx", ""} {
			for _, c := range []struct {
				path string
				body []byte
			}{
				{"/api/v1/push", []byte(items(item("q", "p", "a")))},
				{"/api/v1/configure", []byte(`{"queue":"q"}`)},
				{"/api/v1/system/maintenance", []byte(`{"enabled":true}`)},
			} {
				status, out := n.post(c.path, c.body, append([]string{"Content-Type", ct}, h...)...)
				if status != http.StatusUnsupportedMediaType || !strings.Contains(string(out), "Content-Type must be application/json") {
					t.Errorf("tokens %v, %s as %q: %d %s, want 415", withTokens, c.path, ct, status, out)
				}
			}
		}
		if c := n.count(`SELECT count(*) FROM queen.queues`); c != 0 {
			t.Fatalf("%d queues created by refused requests", c)
		}
		if status, out := n.post("/api/v1/push", []byte(items(item("q", "p", "a"))), append([]string{"Content-Type", "application/json; charset=utf-8"}, h...)...); status != http.StatusCreated {
			t.Fatalf("JSON with a charset: %d %s", status, out)
		}
	}
}

// The metrics-only listener serves metrics without a token.
func TestMetricsOnTheirOwnAddress(t *testing.T) {
	n := newNode(t, nodeOpts{tokens: map[string]tenancy.TenantID{"tok-a": {}}, metrics: "127.0.0.1:0"})
	for _, path := range []string{"/metrics/prometheus", "/metrics"} {
		resp, err := http.Get("http://" + n.br.MetricsAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(out), "# TYPE queen_available_published_total counter") {
			t.Fatalf("metrics listener, %s: %d %.200s", path, resp.StatusCode, out)
		}
		if status, _ := n.get(path); status != http.StatusUnauthorized {
			t.Fatalf("main listener without a token, %s: %d", path, status)
		}
	}
}

// Without tokens on a loopback listener the bridge answers only requests
// that name a loopback host: a page of another site rebinding its name to
// 127.0.0.1 gets 403 and writes nothing, and so does a request a browser
// marks as sent by another site. With tokens the token decides.
func TestTokenlessListenerAnswersOnlyLoopbackHosts(t *testing.T) {
	n := newNode(t, nodeOpts{})
	push := []byte(items(item("rebound", "p", "r1")))
	if status, out := n.post("/api/v1/push", push, "Sec-Fetch-Site", "cross-site"); status != http.StatusForbidden || !strings.Contains(string(out), "loopback address") {
		t.Fatalf("push sent by a page of another site: %d %s, want 403", status, out)
	}
	if status, out := n.post("/api/v1/push", push, "Host", "rebound.example:6632"); status != http.StatusForbidden || !strings.Contains(string(out), "loopback address") {
		t.Fatalf("push naming another host: %d %s, want 403", status, out)
	}
	if status, out := n.get("/api/v1/resources/queues", "Host", "rebound.example"); status != http.StatusForbidden {
		t.Fatalf("queue list naming another host: %d %s, want 403", status, out)
	}
	if status, out := n.get("/", "Host", "rebound.example"); status != http.StatusForbidden {
		t.Fatalf("console naming another host: %d %s, want 403", status, out)
	}
	if status, out := n.get("/api/v1/messages?queue=rebound&partition=p", "Host", "localhost"); status != http.StatusOK || strings.Contains(string(out), "r1") {
		t.Fatalf("read naming localhost: %d %s, want 200 and nothing written", status, out)
	}
	if status, out := n.post("/api/v1/push", push, "Host", "localhost"); status != http.StatusCreated {
		t.Fatalf("push naming localhost: %d %s, want 201", status, out)
	}
	// A GET that consumes, sent by a page of another site (an image tag),
	// is refused; the message is still there for the consumer.
	pop := "/api/v1/pop/queue/rebound?autoAck=true"
	if status, out := n.get(pop, "Sec-Fetch-Site", "cross-site"); status != http.StatusForbidden {
		t.Fatalf("cross-site pop: %d %s, want 403", status, out)
	}
	if status, out := n.get(pop, "Sec-Fetch-Site", "same-origin"); status != http.StatusOK || !strings.Contains(string(out), `"r1"`) {
		t.Fatalf("the console's own pop: %d %s, want 200 with r1", status, out)
	}

	tenant := tenancy.TenantID(uuid.New())
	withTokens := newNode(t, nodeOpts{tokens: map[string]tenancy.TenantID{"tok": tenant}})
	if status, out := withTokens.get("/api/v1/resources/queues", "Host", "rebound.example", "Authorization", "Bearer tok"); status != http.StatusOK {
		t.Fatalf("with tokens, another host and a valid token: %d %s, want 200", status, out)
	}
}
