package httpserve

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1:6632": true, "127.0.0.1": true, "127.8.9.10:80": true, "[::1]:6632": true, "::1": true,
		"localhost": true, "localhost:6632": true, "LOCALHOST:6632": true, "localhost.": true, "app.localhost:6632": true,
		"": false, "evil.example:6632": false, "localhost.evil.example": false, "evillocalhost:6632": false,
		"192.168.1.2:6632": false, "0.0.0.0:6632": false, "[::]:6632": false, "[::ffff:10.0.0.1]:6632": false,
		"10.0.0.1": false, "127.0.0.1.nip.io:6632": false, "[::1]": true, "[::ffff:127.0.0.1]:80": true, "[fe80::1%eth0]:80": false,
		"1e100.example:80": false, "localhost:": true,
	} {
		if got := LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestLoopbackHostsRefusesOtherHosts(t *testing.T) {
	reached := 0
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++ })
	h := LoopbackHosts(next, true, []byte(`{"error":"no"}`))
	for host, want := range map[string]int{"127.0.0.1:6632": http.StatusOK, "localhost:6632": http.StatusOK, "rebound.example:6632": http.StatusForbidden} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/api/v1/push", nil)
		req.Host = host
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %s: %d, want %d", host, rec.Code, want)
		}
		if want == http.StatusForbidden && rec.Body.String() != `{"error":"no"}` {
			t.Errorf("Host %s: body %q", host, rec.Body.String())
		}
	}
	if reached != 2 {
		t.Fatalf("the handler ran %d times, want 2 (the loopback hosts only)", reached)
	}
	for site, want := range map[string]int{"cross-site": http.StatusForbidden, "same-site": http.StatusForbidden, "same-origin": http.StatusOK, "none": http.StatusOK} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/api/v1/pop/queue/q?autoAck=true", nil)
		req.Host, req.Header["Sec-Fetch-Site"] = "127.0.0.1:6632", []string{site}
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Sec-Fetch-Site %s: %d, want %d", site, rec.Code, want)
		}
	}
	if reached != 4 {
		t.Fatalf("the handler ran %d times, want 4 (loopback hosts, not sent by another site)", reached)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Host = "rebound.example:6632"
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	LoopbackHosts(next, false, nil).ServeHTTP(rec, req)
	if reached != 5 {
		t.Fatalf("not enabled, the rule still refused Host %s: %d", req.Host, rec.Code)
	}
}

// The rule runs on every request of a tokenless listener: it allocates
// nothing.
func TestLoopbackHostAllocatesNothing(t *testing.T) {
	for _, host := range []string{"127.0.0.1:6632", "[::1]:6632", "localhost:6632", "App.Localhost", "rebound.example:6632"} {
		if n := testing.AllocsPerRun(100, func() { LoopbackHost(host) }); n != 0 {
			t.Errorf("LoopbackHost(%q): %.0f allocations", host, n)
		}
	}
}
