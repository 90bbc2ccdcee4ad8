package httpserve_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/httpserve"
	"github.com/rs/zerolog"
)

// diffMaxBody is the largest body the lean route of the differential test
// serves itself.
const diffMaxBody = 24 << 10

// pushRefusal is POST /push's answer to a head it refuses (a Content-Type
// other than JSON); status 0 admits the request.
func pushRefusal(contentType string) (int, string) {
	if contentType != "application/json" {
		return http.StatusUnsupportedMediaType, "type:" + contentType
	}
	return 0, ""
}

// diffHandler serves POST /push as the lean route does, and answers any
// other request with its method, URI and body.
var diffHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	push := r.Method == http.MethodPost && r.URL.Path == "/push"
	if status, out := pushRefusal(r.Header.Get("Content-Type")); push && status != 0 {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, out)
		return
	}
	b, err := io.ReadAll(r.Body)
	switch {
	case err != nil:
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, "body:"+err.Error())
	case push:
		_, _ = io.WriteString(w, "echo:"+string(b))
	default:
		_, _ = io.WriteString(w, "other:"+r.Method+" "+r.URL.RequestURI()+" "+string(b))
	}
})

// diffServers starts the lean server (POST /push in the lean loop, heads
// counting the heads it took) and the net/http one, with the same handler.
func diffServers(t *testing.T) (lean, std *httpserve.Server, heads *atomic.Int64, budget *countBudget) {
	t.Helper()
	heads, budget = &atomic.Int64{}, newBudget(false)
	lean, err := httpserve.Listen("127.0.0.1:0", diffHandler, zerolog.Nop(), httpserve.LeanRoute{
		Method: "POST", Path: "/push", MaxBody: diffMaxBody, Budget: budget, BudgetWait: time.Second, BodyTimeout: time.Minute,
		Admit: func(h *httpserve.Head) (int, []byte) {
			heads.Add(1)
			status, out := pushRefusal(h.ContentType)
			return status, []byte(out)
		},
		Refused: func(status int, msg string) []byte { return []byte("refused:" + msg) },
		Serve: func(_ context.Context, _ *httpserve.Head, body []byte) (int, []byte) {
			return http.StatusOK, []byte("echo:" + string(body))
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lean.Shutdown(context.Background()) })
	std, err = httpserve.Listen("127.0.0.1:0", diffHandler, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = std.Shutdown(context.Background()) })
	return lean, std, heads, budget
}

// diffReq is one request of a stream and the answer expected.
type diffReq struct {
	name, raw string
	method    string // as net/http reads it: a blank line may follow a "POST"
	want      string // "status body"; with anyBody only the status is known
	anyBody   bool
	lean      bool // the lean loop takes it unless a request before was handed over
	ends      bool // the connection may end after it: only a stream's last
	closes    bool // the server closes the connection after it
}

// piece is a write, after a pause.
type piece struct {
	pause time.Duration
	data  string
}

// turn is what is written before answers are read.
type turn struct {
	pieces  []piece
	answers int
}

type diffStream struct {
	mode      string
	reqs      []diffReq
	turns     []turn
	halfClose bool // the sending side closes after the last write
}

func (st *diffStream) String() string {
	names := make([]string, len(st.reqs))
	for i, r := range st.reqs {
		names[i] = r.name
	}
	return fmt.Sprintf("%s, half-closed %v: %s", st.mode, st.halfClose, strings.Join(names, "; "))
}

// leanHeads is the number of heads the lean loop takes: those before the
// first request handed over.
func (st *diffStream) leanHeads() (n int64) {
	for _, r := range st.reqs {
		if !r.lean {
			break
		}
		n++
	}
	return n
}

// exchange sends st on a connection of its own and reads its answers, each
// "status body", and then the connection's end.
func exchange(addr string, st *diffStream) ([]string, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		return nil, err
	}
	rd := bufio.NewReader(c)
	ends := st.reqs[len(st.reqs)-1].ends
	var got []string
	for i, tn := range st.turns {
		sent := make(chan error, 1)
		go func() {
			var err error
			for _, p := range tn.pieces {
				time.Sleep(p.pause)
				if _, err = io.WriteString(c, p.data); err != nil {
					break
				}
			}
			if st.halfClose && i == len(st.turns)-1 {
				_ = c.(*net.TCPConn).CloseWrite()
			}
			if ends { // the server may close before the last body is sent
				err = nil
			}
			sent <- err
		}()
		for range tn.answers {
			res, err := http.ReadResponse(rd, nil)
			if err != nil {
				return got, fmt.Errorf("answer %d: %w", len(got)+1, err)
			}
			b, err := io.ReadAll(res.Body)
			if err != nil {
				return got, err
			}
			got = append(got, strconv.Itoa(res.StatusCode)+" "+string(b))
		}
		if err := <-sent; err != nil {
			return got, err
		}
	}
	if !st.halfClose && !st.reqs[len(st.reqs)-1].closes {
		_ = c.(*net.TCPConn).CloseWrite()
	}
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return got, err
	}
	// A server that closed with bytes of the last request unread may reset.
	if b, err := rd.ReadByte(); !errors.Is(err, io.EOF) && !(ends && errors.Is(err, syscall.ECONNRESET)) {
		return got, fmt.Errorf("after %d answers the connection goes on: %q, %v", len(got), b, err)
	}
	return got, nil
}

func clip(s string) string {
	if len(s) > 120 {
		return fmt.Sprintf("%q… (%d bytes)", s[:120], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// Streams of random requests on one connection, pipelined, split at random
// offsets or sent in turn, get the same answers from the lean loop as from
// net/http; the lean loop takes every push before the first request it
// hands over, and gives back every byte of the budget. A push refused on
// its head ends a stream (the lean loop closes after it, net/http does
// not), and the CR and LF bytes between requests are at most four (more
// are a malformed request to net/http, which closes).
func TestLeanRouteAnswersAsNetHTTP(t *testing.T) {
	t.Parallel()
	for _, seed := range []int64{1, 2, 3, 4} {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			t.Parallel()
			lean, std, heads, budget := diffServers(t)
			g := diffGen{rand.New(rand.NewSource(seed))}
			var wantHeads int64
			for i := range 80 {
				st := g.stream()
				wantHeads += st.leanHeads()
				var gotLean, gotStd []string
				var errLean, errStd error
				var wg sync.WaitGroup
				wg.Go(func() { gotLean, errLean = exchange(lean.Addr(), &st) })
				wg.Go(func() { gotStd, errStd = exchange(std.Addr(), &st) })
				wg.Wait()
				if errLean != nil || errStd != nil {
					t.Errorf("stream %d (%s): lean server: %v; net/http: %v", i, &st, errLean, errStd)
					continue
				}
				for j, r := range st.reqs {
					switch {
					case gotLean[j] != gotStd[j]:
						t.Errorf("stream %d (%s), request %d %s: lean server %s, net/http %s", i, &st, j+1, clip(r.raw), clip(gotLean[j]), clip(gotStd[j]))
					case r.anyBody && !strings.HasPrefix(gotStd[j], r.want+" "), !r.anyBody && gotStd[j] != r.want:
						t.Errorf("stream %d (%s), request %d %s: answered %s, want %s", i, &st, j+1, clip(r.raw), clip(gotStd[j]), clip(r.want))
					}
				}
			}
			if n := heads.Load(); n != wantHeads {
				t.Errorf("the lean loop took %d heads, want %d", n, wantHeads)
			}
			if n := budget.inUse.Load(); n != 0 {
				t.Errorf("%d budget bytes not given back", n)
			}
		})
	}
}

// diffGen makes random request streams.
type diffGen struct{ rng *rand.Rand }

func (g diffGen) pick(s ...string) string { return s[g.rng.Intn(len(s))] }

// stream is one to eight requests, up to four CR or LF bytes now and then
// after a POST.
func (g diffGen) stream() diffStream {
	var st diffStream
	n := 1 + g.rng.Intn(8)
	raws := make([]string, n)
	for i := range n {
		r := g.next(i == n-1)
		if i > 0 && st.reqs[i-1].method == "POST" && g.rng.Intn(4) == 0 {
			r.raw = g.pick("\r\n", "\r\n", "\r\n", "\n", "\r\n\r\n", "\n\n\n") + r.raw
		}
		st.reqs, raws[i] = append(st.reqs, r), r.raw
	}
	switch g.rng.Intn(4) {
	case 0:
		st.mode = "pipelined"
		st.turns = []turn{{pieces: []piece{{data: strings.Join(raws, "")}}, answers: n}}
	case 1, 2:
		st.mode = "split"
		st.turns = []turn{{pieces: g.split(strings.Join(raws, ""), 1+g.rng.Intn(6)), answers: n}}
	default:
		st.mode = "in turn"
		for _, raw := range raws {
			st.turns = append(st.turns, turn{pieces: g.split(raw, g.rng.Intn(2)), answers: 1})
		}
	}
	st.halfClose = g.rng.Intn(4) == 0
	return st
}

// split cuts s at up to cuts random offsets, pausing up to 1.5 ms before
// each piece but the first.
func (g diffGen) split(s string, cuts int) []piece {
	at := []int{0, len(s)}
	for range cuts {
		at = append(at, g.rng.Intn(len(s)+1))
	}
	sort.Ints(at)
	var ps []piece
	for i := 1; i < len(at); i++ {
		if at[i] == at[i-1] {
			continue
		}
		var pause time.Duration
		if len(ps) > 0 {
			pause = time.Duration(g.rng.Intn(1500)) * time.Microsecond
		}
		ps = append(ps, piece{pause: pause, data: s[at[i-1]:at[i]]})
	}
	return ps
}

// next is a random request; last admits those after which the connection
// may end.
func (g diffGen) next(last bool) diffReq {
	const leanPushes = 24 // of 32 kinds of request in a stream, of 37 at its end
	kinds := 32
	if last {
		kinds = 37
	}
	b := g.body()
	echo := "200 echo:" + b
	k := g.rng.Intn(kinds)
	if k < leanPushes {
		return diffReq{name: fmt.Sprintf("a push of %d bytes", len(b)), method: "POST", want: echo, lean: true,
			raw: g.request("POST /push HTTP/1.1", g.pushFields(b, "application/json"), b)}
	}
	switch k - leanPushes {
	case 0:
		b = g.bytes(diffMaxBody + 1 + g.rng.Intn(4<<10))
		return diffReq{name: "a push over MaxBody", method: "POST", want: "200 echo:" + b,
			raw: g.request("POST /push HTTP/1.1", g.pushFields(b, "application/json"), b)}
	case 1:
		return diffReq{name: "a push with a query", method: "POST", want: echo,
			raw: g.request(fmt.Sprintf("POST /push?n=%d HTTP/1.1", g.rng.Intn(100)), g.pushFields(b, "application/json"), b)}
	case 2:
		f := g.pushFields(b, "application/json")
		if te := g.field("Transfer-Encoding", "chunked"); g.rng.Intn(2) == 0 {
			f[1] = te // in place of Content-Length
		} else {
			f = append(f, te) // which net/http reads in place of Content-Length
		}
		return diffReq{name: "a chunked push", method: "POST", want: echo, raw: g.request("POST /push HTTP/1.1", f, g.chunked(b))}
	case 3:
		head := g.request("POST /push HTTP/1.1", g.pushFields(b, "application/json"), "")
		if g.rng.Intn(2) == 0 {
			head = strings.ReplaceAll(head, "\r\n", "\n")
		} else {
			line := g.rng.Intn(strings.Count(head, "\r\n"))
			i := len(strings.Join(strings.SplitN(head, "\r\n", line+2)[:line+1], "\r\n"))
			head = head[:i] + head[i+1:]
		}
		return diffReq{name: "a push with a bare LF", method: "POST", want: echo, raw: head + b}
	case 4:
		f := append(g.pushFields(b, "application/json"), g.field("X-Pad", strings.Repeat("p", 8<<10+g.rng.Intn(4<<10))))
		return diffReq{name: "a push with a head over 8 KiB", method: "POST", want: echo, raw: g.request("POST /push HTTP/1.1", f, b)}
	case 5:
		f := g.pushFields(b, "application/json", "application/json")
		if g.rng.Intn(2) == 0 { // the same length twice, as net/http admits
			f = g.pushFields(b, "application/json")
			f = append(f, g.field("Content-Length", strings.Trim(f[1][strings.IndexByte(f[1], ':')+1:], " \t")))
		}
		return diffReq{name: "a push with a repeated header", method: "POST", want: echo, raw: g.request("POST /push HTTP/1.1", f, b)}
	case 6:
		method, uri := g.pick("GET", "PUT", "DELETE", "post", "POST"), g.pick("/push", "/", "/pushx", "/push/", "/Push", "/status?x=1")
		if method == "POST" && uri == "/push" {
			uri = "/push/1"
		}
		f := []string{g.field("Host", "localhost")}
		if method == "GET" {
			b = ""
		} else {
			f = g.pushFields(b, "application/json")
		}
		return diffReq{name: method + " " + uri, method: method, want: "200 other:" + method + " " + uri + " " + b,
			raw: g.request(method+" "+uri+" HTTP/1.1", f, b)}
	case 7:
		return diffReq{name: "a push in absolute form", method: "POST", want: echo,
			raw: g.request("POST http://localhost/push HTTP/1.1", g.pushFields(b, "application/json"), b)}
	case 8, 9:
		ct := []string{g.pick("text/plain", "application/json; charset=utf-8", "Application/JSON")}
		if g.rng.Intn(4) == 0 {
			ct = nil
		}
		return diffReq{name: fmt.Sprintf("a push of type %q", ct), method: "POST", want: "415 type:" + strings.Join(ct, ""), lean: true, ends: true,
			raw: g.request("POST /push HTTP/1.1", g.pushFields(b, ct...), b)}
	case 10:
		f := append(g.pushFields(b, "application/json"), g.field("Connection", g.pick("close", "Close", "keep-alive, close")))
		return diffReq{name: "a push closing", method: "POST", want: echo, lean: true, ends: true, closes: true, raw: g.request("POST /push HTTP/1.1", f, b)}
	case 11:
		return diffReq{name: "an HTTP/1.0 push", method: "POST", want: echo, ends: true,
			raw: g.request("POST /push HTTP/1.0", g.pushFields(b, "application/json"), b)}
	default: // without a body, which net/http would leave unread and so reset the connection
		f := g.pushFields("", "application/json")
		if g.rng.Intn(2) == 0 {
			f = f[1:] // no Host
		} else {
			f[1] = g.field("Content-Length", g.pick("+0", "-0", "0, 0", "0x0"))
		}
		return diffReq{name: "a malformed push", method: "POST", want: "400", anyBody: true, ends: true, closes: true, raw: g.request("POST /push HTTP/1.1", f, "")}
	}
}

// request is a request line, its fields in random order, and a body.
func (g diffGen) request(line string, fields []string, body string) string {
	g.rng.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
	return line + "\r\n" + strings.Join(append(fields, ""), "\r\n") + "\r\n" + body
}

// pushFields are a Host (first), a Content-Length for body (second), the
// Content-Types, and some others.
func (g diffGen) pushFields(body string, contentTypes ...string) []string {
	length := strconv.Itoa(len(body))
	if g.rng.Intn(8) == 0 {
		length = "00" + length
	}
	f := []string{g.field("Host", g.pick("localhost", "127.0.0.1:6632", "queen.example", "[::1]:80", "")), g.field("Content-Length", length)}
	for _, ct := range contentTypes {
		f = append(f, g.field("Content-Type", ct))
	}
	for _, e := range [][2]string{{"User-Agent", "queen-test/1.0"}, {"Accept", "*/*"}, {"Authorization", "Bearer t0k"},
		{"Sec-Fetch-Site", "same-origin"}, {"Connection", "keep-alive"}, {"X-Request-Id", "17"}, {"Accept-Encoding", "gzip, deflate"}} {
		if g.rng.Intn(4) == 0 {
			f = append(f, g.field(e[0], e[1]))
		}
	}
	return f
}

// field is a header line, its name in a random case, spaces and tabs
// around its value.
func (g diffGen) field(name, value string) string {
	n := []byte(name)
	switch g.rng.Intn(4) {
	case 0:
		n = []byte(strings.ToLower(name))
	case 1:
		n = []byte(strings.ToUpper(name))
	case 2:
		for i, c := range n {
			if ('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') && g.rng.Intn(2) == 0 {
				n[i] ^= 0x20
			}
		}
	}
	return string(n) + ":" + g.pick("", " ", " ", "  ", "\t") + value + g.pick("", "", " ", "\t")
}

// body is a random body: empty, up to the 4 KiB read buffer, over it, or
// over the 16 KiB an answer is written in one buffer up to.
func (g diffGen) body() string {
	switch k := g.rng.Intn(8); {
	case k == 0:
		return ""
	case k < 4:
		return g.bytes(1 + g.rng.Intn(64))
	case k < 6:
		return g.bytes(64 + g.rng.Intn(4<<10-64))
	case k < 7:
		return g.bytes(4<<10 + g.rng.Intn(8<<10))
	default:
		return g.bytes(16<<10 + g.rng.Intn(diffMaxBody-16<<10+1))
	}
}

// bytes is n random bytes, any byte at all or JSON's.
func (g diffGen) bytes(n int) string {
	b := make([]byte, n)
	if g.rng.Intn(2) == 0 {
		_, _ = g.rng.Read(b)
		return string(b)
	}
	const json = "{\"k\":[1,2.5,\"x y\"],\"v\":null}\r\n"
	for i := range b {
		b[i] = json[g.rng.Intn(len(json))]
	}
	return string(b)
}

// chunked is b in chunks of random sizes.
func (g diffGen) chunked(b string) string {
	var s strings.Builder
	for len(b) > 0 {
		k := min(len(b), 1+g.rng.Intn(2<<10))
		fmt.Fprintf(&s, "%x\r\n%s\r\n", k, b[:k])
		b = b[k:]
	}
	return s.String() + "0\r\n\r\n"
}
