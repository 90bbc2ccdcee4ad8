package httpserve_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/httpserve"
	"github.com/rs/zerolog"
)

// countBudget counts the bytes taken and not given back; with refuse it
// refuses every Take. Each Give is told on gave.
type countBudget struct {
	inUse  atomic.Int64 // atomic: connections' goroutines take and give at once
	refuse bool         // set when made, never changed: read unguarded
	gave   chan struct{}
}

func newBudget(refuse bool) *countBudget {
	return &countBudget{refuse: refuse, gave: make(chan struct{}, 1)}
}

func (b *countBudget) Take(_ context.Context, n int64, _ time.Duration) bool {
	if b.refuse {
		return false
	}
	b.inUse.Add(n)
	return true
}

func (b *countBudget) Give(n int64) {
	b.inUse.Add(-n)
	select {
	case b.gave <- struct{}{}:
	default: // one is waiting to be seen already
	}
}

// leanServer serves POST /push itself (answering "lean:" and the body) and
// everything else through net/http (answering "net/http:", the method, the
// path and the body). serve, when set, runs inside the lean route first.
func leanServer(t *testing.T, budget *countBudget, bodyTimeout time.Duration, serve func()) *httpserve.Server {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, "net/http:"+r.Method+" "+r.URL.Path+" "+string(b))
	})
	s, err := httpserve.Listen("127.0.0.1:0", h, zerolog.Nop(), httpserve.LeanRoute{
		Method: "POST", Path: "/push", MaxBody: 1 << 10, Budget: budget, BudgetWait: time.Second, BodyTimeout: bodyTimeout,
		Admit: func(h *httpserve.Head) (int, []byte) {
			if h.ContentType != "application/json" {
				return http.StatusUnsupportedMediaType, []byte("lean:type " + h.ContentType)
			}
			return 0, nil
		},
		Refused: func(status int, msg string) []byte { return []byte(strconv.Quote(msg)) },
		Serve: func(_ context.Context, h *httpserve.Head, body []byte) (int, []byte) {
			if serve != nil {
				serve()
			}
			return http.StatusOK, []byte("lean:" + string(body))
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	return s
}

func push(body string, extra ...string) string {
	return "POST /push HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" + strings.Join(extra, "") +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// answers reads n answers from the connection: status and body of each.
func answers(t *testing.T, rd *bufio.Reader, n int) []string {
	t.Helper()
	var got []string
	for range n {
		res, err := http.ReadResponse(rd, nil)
		if err != nil {
			t.Fatalf("answer %d: %v (so far %q)", len(got)+1, err, got)
		}
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, strconv.Itoa(res.StatusCode)+" "+string(b))
	}
	return got
}

func dial(t *testing.T, s *httpserve.Server) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, bufio.NewReader(c)
}

func write(t *testing.T, c net.Conn, s string) {
	t.Helper()
	if _, err := io.WriteString(c, s); err != nil {
		t.Fatal(err)
	}
}

// Requests kept alive, pipelined in one write, and split across writes
// (the head, and the body) are answered in order by the lean route.
func TestLeanRouteServesPipelinedAndSplitRequests(t *testing.T) {
	t.Parallel()
	budget := newBudget(false)
	s := leanServer(t, budget, time.Minute, nil)
	c, rd := dial(t, s)
	write(t, c, push("[1]")+push("[2]")+push("[3]")[:20])
	got := answers(t, rd, 2)
	write(t, c, push("[3]")[20:len(push("[3]"))-2])
	time.Sleep(20 * time.Millisecond) // the rest of the body in a later read
	write(t, c, "3]")
	got = append(got, answers(t, rd, 1)...)
	write(t, c, "\r\n"+push("[4]")) // a blank line after a POST is skipped, as net/http does
	got = append(got, answers(t, rd, 1)...)
	want := []string{"200 lean:[1]", "200 lean:[2]", "200 lean:[3]", "200 lean:[4]"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("answers %q, want %q", got, want)
	}
	_ = c.Close()
	budgetBack(t, budget)
}

// budgetBack waits for the budget's bytes to come back: a connection gives
// them back once its answer is written, which its client may read first.
func budgetBack(t *testing.T, budget *countBudget) {
	t.Helper()
	for budget.inUse.Load() != 0 {
		select {
		case <-budget.gave:
		case <-time.After(time.Minute):
			t.Fatalf("%d budget bytes not given back", budget.inUse.Load())
		}
	}
}

// A request the lean loop does not take, and everything after it on the
// same connection, is served by net/http, with nothing read lost.
func TestLeanRouteHandsTheConnectionToNetHTTP(t *testing.T) {
	t.Parallel()
	budget := newBudget(false)
	s := leanServer(t, budget, time.Minute, nil)
	c, rd := dial(t, s)
	write(t, c, push("[1]")+"GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n"+push("[2]"))
	got := answers(t, rd, 3)
	write(t, c, "POST /push HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n[4]\r\n0\r\n\r\n")
	got = append(got, answers(t, rd, 1)...)
	c2, rd2 := dial(t, s) // a chunked push on a fresh connection
	write(t, c2, "POST /push HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n[5]\r\n0\r\n\r\n"+push("[6]"))
	got = append(got, answers(t, rd2, 2)...)
	c4, rd4 := dial(t, s) // lines ended by a bare LF: net/http answers at once
	write(t, c4, "GET /hello HTTP/1.1\nHost: localhost\n\n")
	got = append(got, answers(t, rd4, 1)...)
	long := push("[7]", "X-Long: "+strings.Repeat("x", 9<<10)+"\r\n") // a head over the lean loop's bound
	c3, rd3 := dial(t, s)
	write(t, c3, long)
	got = append(got, answers(t, rd3, 1)...)
	want := []string{"200 lean:[1]", "200 net/http:GET /hello ", "200 net/http:POST /push [2]", "200 net/http:POST /push [4]",
		"200 net/http:POST /push [5]", "200 net/http:POST /push [6]", "200 net/http:GET /hello ", "200 net/http:POST /push [7]"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("answers %q, want %q", got, want)
	}
	// Past the four CR or LF bytes net/http skips after a POST, the rest
	// is a malformed request, and net/http's to answer.
	c5, rd5 := dial(t, s)
	write(t, c5, push("[8]")+"\r\n\r\n\r\n"+push("[9]"))
	if got := answers(t, rd5, 2); got[0] != "200 lean:[8]" || !strings.HasPrefix(got[1], "400 ") {
		t.Errorf("six blank bytes after a push: %q", got)
	}
}

// Connection: close, a full budget and a late body end the connection
// after their answer; the budget's bytes are given back.
func TestLeanRouteClosesWhenItCannotGoOn(t *testing.T) {
	t.Parallel()
	budget := newBudget(false)
	s := leanServer(t, budget, 100*time.Millisecond, nil)
	full := leanServer(t, newBudget(true), time.Minute, nil)
	for _, c := range []struct {
		name      string
		s         *httpserve.Server
		send      string
		want      string
		halfClose bool
	}{
		{"Connection: close", s, push("[1]", "Connection: close\r\n") + push("[2]"), "200 lean:[1]", false},
		{"a full budget", full, push("[1]") + push("[2]"), `503 "too many request bytes in flight; try again shortly"`, false},
		{"a late body", s, push("[1]")[:len(push("[1]"))-1], `408 "the body did not arrive within 100ms"`, false},
		{"a body cut short", s, push("[1]")[:len(push("[1]"))-1], `400 "reading the body: unexpected EOF"`, true},
		{"a head cut short", s, push("[1]")[:20], "400 400 Bad Request", true},
		// Refused on its head: answered at once, its body neither awaited
		// nor taken from the budget.
		{"a refused head", s, "POST /push HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n[1", "415 lean:type text/plain", false},
	} {
		conn, rd := dial(t, c.s)
		write(t, conn, c.send)
		if c.halfClose {
			_ = conn.(*net.TCPConn).CloseWrite()
		}
		res, err := http.ReadResponse(rd, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		b, _ := io.ReadAll(res.Body)
		if got := strconv.Itoa(res.StatusCode) + " " + string(b); got != c.want || !res.Close {
			t.Errorf("%s: %q (closing %v), want %q and closing", c.name, got, res.Close, c.want)
		}
		if _, err := rd.ReadByte(); !errors.Is(err, io.EOF) {
			t.Errorf("%s: the connection goes on after the answer (%v)", c.name, err)
		}
	}
	budgetBack(t, budget)
}

// Shutdown closes idle lean connections, and waits for a request in
// progress, which is answered and its connection closed.
func TestLeanRouteShutdown(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	s := leanServer(t, newBudget(false), time.Minute, func() {
		once.Do(func() { close(entered) })
		<-release
	})
	_, idleRd := dial(t, s)
	busy, busyRd := dial(t, s)
	write(t, busy, push("[1]"))
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- s.Shutdown(context.Background()) }()
	if _, err := idleRd.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("an idle connection is not closed by Shutdown: %v", err)
	}
	select {
	case err := <-stopped:
		t.Fatalf("Shutdown returned while a request was in progress: %v", err)
	default:
	}
	close(release)
	if got := answers(t, busyRd, 1); got[0] != "200 lean:[1]" {
		t.Errorf("the request in progress got %q", got)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if _, err := busyRd.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("the busy connection goes on after Shutdown: %v", err)
	}
	if _, err := net.Dial("tcp", s.Addr()); err == nil {
		t.Error("a connection is accepted after Shutdown")
	}
}
