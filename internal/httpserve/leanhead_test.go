package httpserve

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"testing"
)

var testRoutes = []LeanRoute{{Method: "POST", Path: "/api/v1/push", MaxBody: 1000}}

func TestParseHeadTakesOnlyPlainRequestsOfItsRoutes(t *testing.T) {
	t.Parallel()
	const ok = "POST /api/v1/push HTTP/1.1\r\nHost: localhost:6632\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n"
	for _, c := range []struct {
		name, head string
		lean       bool
	}{
		{"plain", ok, true},
		{"names in any case, spaces around values", "POST /api/v1/push HTTP/1.1\r\nhOST:  localhost \r\nCONTENT-length:\t12\r\nUser-Agent: x\r\n\r\n", true},
		{"another method", strings.Replace(ok, "POST", "PUT", 1), false},
		{"another path", strings.Replace(ok, "/push", "/pus", 1), false},
		{"a query", strings.Replace(ok, "/push", "/push?x=1", 1), false},
		{"a cleaned path", strings.Replace(ok, "/v1/", "/v1//", 1), false},
		{"HTTP/1.0", strings.Replace(ok, "HTTP/1.1", "HTTP/1.0", 1), false},
		{"a Host net/http refuses", strings.Replace(ok, "Host: localhost", "Host: evil.example .localhost", 1), false},
		{"no Host", strings.Replace(ok, "Host: localhost:6632\r\n", "", 1), false},
		{"two Hosts", strings.Replace(ok, "Host:", "Host: a\r\nHost:", 1), false},
		{"no Content-Length", strings.Replace(ok, "Content-Length: 12\r\n", "", 1), false},
		{"two Content-Lengths", strings.Replace(ok, "Content-Length: 12", "Content-Length: 12\r\nContent-Length: 12", 1), false},
		{"a signed Content-Length", strings.Replace(ok, ": 12", ": +12", 1), false},
		{"a Content-Length list", strings.Replace(ok, ": 12", ": 12, 12", 1), false},
		{"a body over MaxBody", strings.Replace(ok, ": 12", ": 1001", 1), false},
		{"chunked", strings.Replace(ok, "Content-Length: 12", "Transfer-Encoding: chunked", 1), false},
		{"chunked and a length", strings.Replace(ok, "Content-Length: 12", "Content-Length: 12\r\nTransfer-Encoding: chunked", 1), false},
		{"Expect", strings.Replace(ok, "\r\n\r\n", "\r\nExpect: 100-continue\r\n\r\n", 1), false},
		{"Upgrade", strings.Replace(ok, "\r\n\r\n", "\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", 1), false},
		{"a folded line", strings.Replace(ok, "\r\nContent-Type", "\r\n folded\r\nContent-Type", 1), false},
		{"a space before the colon", strings.Replace(ok, "Content-Type:", "Content-Type :", 1), false},
		{"bare LF", strings.ReplaceAll(ok, "\r\n", "\n"), false},
		{"two Authorizations", strings.Replace(ok, "\r\n\r\n", "\r\nAuthorization: Bearer a\r\nAuthorization: Bearer b\r\n\r\n", 1), false},
	} {
		_, _, got := parseHead([]byte(c.head), testRoutes)
		if got != c.lean {
			t.Errorf("%s: lean %v, want %v", c.name, got, c.lean)
		}
	}
	_, h, _ := parseHead([]byte(strings.Replace(ok, "\r\n\r\n", "\r\nAuthorization: Bearer tok \r\nSec-Fetch-Site: cross-site\r\nConnection: keep-alive, Close\r\n\r\n", 1)), testRoutes)
	want := Head{Host: "localhost:6632", Authorization: "Bearer tok", ContentType: "application/json", SecFetchSite: "cross-site", ContentLength: 12, Close: true}
	if h != want {
		t.Errorf("head %+v, want %+v", h, want)
	}
}

// FuzzParseHead: a head the lean loop takes is one net/http reads as the
// same request: the method and path, the Host, the length of the body, the
// headers the route decides on, and whether the connection closes after.
func FuzzParseHead(f *testing.F) {
	f.Add([]byte("POST /api/v1/push HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n"))
	f.Add([]byte("POST /api/v1/push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"))
	f.Add([]byte("POST /api/v1/push HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"))
	f.Add([]byte("POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Length: 00\r\nSec-Fetch-Site: same-site\r\n\r\n"))
	f.Fuzz(func(t *testing.T, head []byte) {
		if !bytes.HasSuffix(head, []byte("\r\n\r\n")) || bytes.Count(head, []byte("\r\n\r\n")) != 1 {
			return // the lean loop passes a head up to its first blank line
		}
		_, h, ok := parseHead(head, testRoutes)
		if !ok {
			return
		}
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
		if err != nil {
			t.Fatalf("lean takes a head net/http refuses (%v): %q", err, head)
		}
		switch {
		case r.Method != "POST" || r.URL.Path != "/api/v1/push" || r.URL.RawQuery != "" || r.ProtoMinor != 1:
			t.Errorf("net/http reads %s %s (query %q, HTTP/1.%d): %q", r.Method, r.URL.Path, r.URL.RawQuery, r.ProtoMinor, head)
		case r.Host != h.Host || r.ContentLength != h.ContentLength || len(r.TransferEncoding) != 0:
			t.Errorf("net/http reads host %q length %d %v, lean %q %d: %q", r.Host, r.ContentLength, r.TransferEncoding, h.Host, h.ContentLength, head)
		case r.Header.Get("Authorization") != h.Authorization || r.Header.Get("Content-Type") != h.ContentType ||
			r.Header.Get("Sec-Fetch-Site") != h.SecFetchSite:
			t.Errorf("net/http reads other headers %v than lean %+v: %q", r.Header, h, head)
		case r.Close != h.Close:
			t.Errorf("net/http closes %v, lean %v: %q", r.Close, h.Close, head)
		case r.Header.Get("Expect") != "" || r.Header.Get("Upgrade") != "":
			t.Errorf("lean takes a head with Expect or Upgrade: %q", head)
		}
	})
}
