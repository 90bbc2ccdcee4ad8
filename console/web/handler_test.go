package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func serve(h http.Handler, method, path, remote string) *http.Response {
	r := httptest.NewRequest(method, path, nil)
	r.RemoteAddr = remote
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Without tokens the pages go to loopback peers only, and the refusal says
// what to configure; with tokens they go to anyone (the data routes need
// the token, the pages hold no data).
func TestPagesWithoutTokensOnlyForLoopbackPeers(t *testing.T) {
	cases := []struct {
		name   string
		tokens bool
		remote string
		want   int
	}{
		{"ipv4 loopback", false, "127.0.0.1:50000", http.StatusOK},
		{"another 127/8 address", false, "127.0.3.4:50000", http.StatusOK},
		{"ipv6 loopback", false, "[::1]:50000", http.StatusOK},
		{"private network", false, "192.168.1.20:50000", http.StatusForbidden},
		{"public address", false, "203.0.113.9:443", http.StatusForbidden},
		{"ipv6 address", false, "[2001:db8::1]:50000", http.StatusForbidden},
		{"v4-mapped outside", false, "[::ffff:10.0.0.1]:50000", http.StatusForbidden},
		{"no port, not an address", false, "somewhere", http.StatusForbidden},
		{"tokens: any peer", true, "192.168.1.20:50000", http.StatusOK},
		{"tokens: loopback", true, "127.0.0.1:50000", http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := New(Config{Tokens: c.tokens})
			for _, path := range []string{"/", "/console/queues", "/console/static/console.js"} {
				resp := serve(h, http.MethodGet, path, c.remote)
				text := body(t, resp)
				if resp.StatusCode != c.want {
					t.Fatalf("%s from %s: %d, want %d: %s", path, c.remote, resp.StatusCode, c.want, text)
				}
				if c.want == http.StatusForbidden && !strings.Contains(text, "QUEEN_HTTP_ADMIN_TOKENS") {
					t.Fatalf("the refusal does not say to configure tokens: %q", text)
				}
			}
		})
	}
}

func TestPagesAndAssets(t *testing.T) {
	h := New(Config{})
	const local = "127.0.0.1:40000"
	cases := []struct {
		path, wantType string
		want           int
	}{
		{"/", "text/html", http.StatusOK},
		{"/console", "text/html", http.StatusOK},
		{"/console/", "text/html", http.StatusOK},
		{"/console/queues", "text/html", http.StatusOK},
		{"/console/queues/orders.eu", "text/html", http.StatusOK},
		{"/console/queues/a%2Fb", "text/html", http.StatusOK},
		{"/console/messages?queue=q&partition=p&from=3", "text/html", http.StatusOK},
		{"/console/dead-letters?queue=q", "text/html", http.StatusOK},
		{"/console/static/console.js", "javascript", http.StatusOK},
		{"/console/static/console.css", "text/css", http.StatusOK},
		{"/console/nothing", "text/plain", http.StatusNotFound},
		{"/console/queues/", "text/plain", http.StatusNotFound},
		{"/console/static/missing.js", "text/plain", http.StatusNotFound},
		{"/console/static/", "text/plain", http.StatusNotFound},
		{"/console/static/index.html", "text/plain", http.StatusNotFound},
	}
	for _, c := range cases {
		resp := serve(h, http.MethodGet, c.path, local)
		text := body(t, resp)
		if resp.StatusCode != c.want || !strings.Contains(resp.Header.Get("Content-Type"), c.wantType) {
			t.Errorf("%s: %d %q, want %d %s", c.path, resp.StatusCode, resp.Header.Get("Content-Type"), c.want, c.wantType)
		}
		if c.want == http.StatusOK && c.wantType == "text/html" && !strings.Contains(text, `<main id="page">`) {
			t.Errorf("%s: not the shell: %.200s", c.path, text)
		}
		if c.want == http.StatusOK && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("%s: no content security policy", c.path)
		}
	}
	if resp := serve(h, http.MethodPost, "/console/queues", local); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", resp.StatusCode)
	}
}

// The shell loads nothing but the console's own files: no CDN, nothing from
// another origin.
func TestShellLoadsOnlyItsOwnFiles(t *testing.T) {
	for _, name := range []string{"static/index.html", "static/console.css", "static/console.js"} {
		b, err := static.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?:src|href)="([^"]*)"|url\(([^)]*)\)|import\s|fetch\("(https?:)?//`).FindAllStringSubmatch(string(b), -1) {
			ref := m[1] + m[2]
			if strings.HasPrefix(m[0], "import") || strings.HasPrefix(m[0], "fetch") || !strings.HasPrefix(ref, "/console/") {
				t.Errorf("%s refers to %q: the console loads only /console/ files", name, m[0])
			}
		}
	}
}
