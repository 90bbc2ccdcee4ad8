package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// The lean client posts each push on a kept-alive connection and counts
// its answer as net/http's client does; it dials again only when the
// bridge closed the last connection, and a refusal is an error carrying
// the answer's body.
func TestLeanHTTPClientPushesOnKeptAliveConnections(t *testing.T) {
	var conns atomic.Int64
	var mu sync.Mutex // guards bodies and the answer plan
	var bodies []string
	// Each push's answer: 201 with a length, 201 chunked, a refusal that
	// keeps the connection, 201, a refusal that closes it, 201.
	plan := []string{"201", "201 chunked", "503", "201", "503 close", "201"}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type")+" "+string(b))
		answer := plan[0]
		plan = plan[1:]
		mu.Unlock()
		switch answer {
		case "201":
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(echoFor(b))
		case "201 chunked":
			w.WriteHeader(http.StatusCreated)
			out := echoFor(b)
			_, _ = w.Write(out[:5])
			w.(http.Flusher).Flush() // the head leaves without a length
			_, _ = w.Write(out[5:])
		case "503 close":
			w.Header().Set("Connection", "close")
			fallthrough
		default:
			http.Error(w, `{"error":"stopping"}`, http.StatusServiceUnavailable)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	tgt, err := newBridgeTarget(options{transport: "http", httpClient: "lean", httpAddr: strings.TrimPrefix(srv.URL, "http://"), clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.close()
	items := []item{{queue: "q", partition: "p0", txid: "a", payload: []byte(`{}`)}, {queue: "q", partition: "p1", txid: "b", payload: []byte(`{}`)}}
	for i, want := range []string{"", "", "HTTP 503", "", "HTTP 503", ""} {
		counts, err := tgt.push(context.Background(), 0, items)
		switch {
		case want == "" && (err != nil || counts["queued"] != 2):
			t.Fatalf("push %d: %v, %v; want 2 queued", i, counts, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "stopping")):
			t.Fatalf("push %d: %v; want an error with %q and the answer's body", i, err, want)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("%d connections for 6 pushes with one closed by the server, want 2", n)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, b := range bodies {
		if !strings.HasPrefix(b, `POST /api/v1/push application/json {"items":[{"queue":"q","partition":"p0","transactionId":"a"`) {
			t.Fatalf("request %q", b)
		}
	}
}

// An unknown -http-client is refused.
func TestUnknownHTTPClientIsRefused(t *testing.T) {
	if _, err := newBridgeTarget(options{transport: "http", httpClient: "curl", httpAddr: "127.0.0.1:1"}); err == nil || !strings.Contains(err.Error(), "-http-client") {
		t.Fatalf("%v, want a refusal naming -http-client", err)
	}
}

// An answer's head gives its status, how its body is framed and whether
// the connection can carry another; a status line that does not parse, an
// interim answer or a framing the client cannot read is an error.
func TestReadHeadReadsAnswers(t *testing.T) {
	for head, want := range map[string]httpHead{
		"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 21\r\n\r\n": {status: 201, length: 21, hasLength: true},
		"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 4\r\n\r\n":   {status: 503, length: 4, hasLength: true, close: true},
		"HTTP/1.1 201 Created\r\nConnection: keep-alive, Close\r\n\r\n":                        {status: 201, close: true},
		"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n":                           {status: 201, chunked: true},
		"HTTP/1.0 200\r\nContent-Length: 2\r\n\r\n":                                            {status: 200, length: 2, hasLength: true, close: true},
		"HTTP/1.1 100 Continue\r\n\r\n":                                                        {status: -1},
		"HTTP/1.1 2x1 OK\r\n\r\n":                                                              {status: -1},
		"HTTP/1.1 20 OK\r\n\r\n":                                                               {status: -1},
		"HTTP/1.1 2015 OK\r\n\r\n":                                                             {status: -1},
		"HTTP/1.1 201 Created\r\n":                                                             {status: -1}, // the head never ends
		"HTTP/1.1 201 Created\r\nContent-Length: 70000000\r\n\r\n":                             {status: -1},
		"HTTP/1.1 201 Created\r\nTransfer-Encoding: gzip\r\n\r\n":                              {status: -1},
	} {
		h, err := readHead(bufio.NewReader(strings.NewReader(head)), maxAnswer)
		switch {
		case want.status < 0 && err == nil:
			t.Errorf("%q: %+v, want an error", head, h)
		case want.status >= 0 && (err != nil || h != want):
			t.Errorf("%q: %+v, %v; want %+v", head, h, err, want)
		}
	}
}
