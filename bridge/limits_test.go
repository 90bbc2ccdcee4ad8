package bridge_test

import (
	"bufio"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// slowBody opens a connection that declares a body of declared bytes, sends
// sent of them, and stalls.
func slowBody(t *testing.T, n *node, declared, sent int) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(n.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	head := "POST /api/v1/push HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(declared) + "\r\n\r\n"
	if _, err := conn.Write([]byte(head + `{"items":[` + strings.Repeat(" ", sent-len(`{"items":[`)))); err != nil {
		t.Fatal(err)
	}
	return conn
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// A hundred connections that each declare a 16 MiB body and send 1 KiB
// hold a few KiB each, not 16 MiB: memory is taken as the body arrives.
func TestSlowBodiesHoldLittleMemory(t *testing.T) {
	n := newNode(t, nodeOpts{})
	before := heapInUse()
	const conns = 100
	for i := 0; i < conns; i++ {
		slowBody(t, n, 16<<20, 1<<10)
	}
	waitUntil(t, "every slow body to be read as far as it came", 30*time.Second, func() bool {
		return metricValue(t, n, "queen_inflight_body_bytes") >= conns*(1<<10)
	})
	grown := int64(heapInUse()) - int64(before)
	held := metricValue(t, n, "queen_inflight_body_bytes")
	t.Logf("%d slow bodies: heap grew %d KiB, %0.f KiB taken from the budget", conns, grown>>10, held/1024)
	if grown > 64<<20 || held > conns*64<<10 {
		t.Fatalf("heap grew %d MiB and %.0f KiB are held for %d connections that sent 1 KiB each", grown>>20, held/1024, conns)
	}
}

// A body that stops arriving is answered 408 after BodyTimeout, and its
// bytes go back to the budget.
func TestStalledBodyTimesOut(t *testing.T) {
	n := newNode(t, nodeOpts{bodyTO: 300 * time.Millisecond})
	conn := slowBody(t, n, 1000, 100)
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("stalled body answered %d", resp.StatusCode)
	}
	waitUntil(t, "the budget to be given back", 10*time.Second, func() bool { return metricValue(t, n, "queen_inflight_body_bytes") == 0 })
}

// With the in-flight budget full, a new push waits briefly and gets 503,
// over HTTP and NATS; once the budget has room again, pushes go through.
func TestInflightBudgetRefusesWhenFull(t *testing.T) {
	n := newNode(t, nodeOpts{inflight: 64 << 10, bodyWait: 100 * time.Millisecond})
	hog := slowBody(t, n, 100<<10, 60<<10)
	waitUntil(t, "the slow body to fill the budget", 30*time.Second, func() bool {
		return metricValue(t, n, "queen_inflight_body_bytes") >= 60<<10
	})
	status, out := n.post("/api/v1/push", []byte(items(item("q", "p", "a"))))
	if status != http.StatusServiceUnavailable || !strings.Contains(string(out), "too many request bytes in flight") {
		t.Fatalf("HTTP push with the budget full: %d %s", status, out)
	}
	if msg := n.natsPush([]byte(items(item("q", "p", "b"))), ""); msg.Header.Get("Nats-Service-Error-Code") != "503" {
		t.Fatalf("NATS push with the budget full: %v %s", msg.Header, msg.Data)
	}
	if c := n.count(`SELECT count(*) FROM queen.queues`); c != 0 {
		t.Fatalf("%d queues made by refused pushes", c)
	}
	hog.Close()
	waitUntil(t, "the budget to be given back", 10*time.Second, func() bool { return metricValue(t, n, "queen_inflight_body_bytes") == 0 })
	if status, out := n.post("/api/v1/push", []byte(items(item("q", "p", "c")))); status != http.StatusCreated {
		t.Fatalf("push after the budget emptied: %d %s", status, out)
	}
	if msg := n.natsPush([]byte(items(item("q", "p", "d"))), ""); msg.Header.Get("Nats-Service-Error-Code") != "" {
		t.Fatalf("NATS push after the budget emptied: %v %s", msg.Header, msg.Data)
	}
}

// A read page stops before the message that would pass maxBytes, always
// holds at least one, and says where to go on.
func TestReadPagesStopAtMaxBytes(t *testing.T) {
	n := newNode(t, nodeOpts{})
	var parts []string
	for i := 0; i < 10; i++ {
		parts = append(parts, `{"queue":"big","partition":"p","payload":"`+strings.Repeat("x", 998)+`"}`) // 1,000 bytes as stored
	}
	n.pushHTTP(items(parts...))
	if a := n.read("queue=big&partition=p&maxBytes=3500"); len(a.Messages) != 3 || a.Next != 4 {
		t.Fatalf("maxBytes 3500: %d messages, next %d", len(a.Messages), a.Next)
	}
	if a := n.read("queue=big&partition=p&from=4&maxBytes=10"); len(a.Messages) != 1 || a.Next != 5 {
		t.Fatalf("maxBytes 10: %d messages, next %d (one message however large)", len(a.Messages), a.Next)
	}
	if a := n.read("queue=big&partition=p"); len(a.Messages) != 10 {
		t.Fatalf("default maxBytes: %d messages", len(a.Messages))
	}
	for _, q := range []string{"maxBytes=-1", "maxBytes=16777217", "maxBytes=x"} {
		if status, out := n.get("/api/v1/messages?queue=big&" + q); status != http.StatusBadRequest || !strings.Contains(string(out), "maxBytes must be") {
			t.Errorf("%s: %d %s", q, status, out)
		}
	}
}

// HTTP reads that may park count against the same cap as NATS fetches.
func TestParkedHTTPReadsAreCapped(t *testing.T) {
	n := newNode(t, nodeOpts{parked: 2})
	done := make(chan readAnswer, 2)
	for i := 0; i < 2; i++ {
		go func() { done <- n.read("queue=cap&partition=p&waitMs=20000") }()
	}
	waitUntil(t, "two reads to park", 10*time.Second, func() bool { return metricValue(t, n, "queen_parked_reads") == 2 })
	if status, out := n.get("/api/v1/messages?queue=cap&partition=p&waitMs=1000"); status != http.StatusServiceUnavailable || !strings.Contains(string(out), "too many parked reads") {
		t.Fatalf("third parked read: %d %s", status, out)
	}
	msg, err := n.nc.Request(n.prefix+".v1.fetch", []byte(`{"queue":"cap","partition":"p","waitMs":1000}`), 10*time.Second)
	if err != nil || msg.Header.Get("Nats-Service-Error-Code") != "503" {
		t.Fatalf("a NATS fetch beyond the cap: %v %v", err, msg.Header)
	}
	if status, _ := n.get("/api/v1/messages?queue=cap&partition=p"); status != http.StatusOK {
		t.Fatalf("a read that does not wait: %d", status)
	}
	n.pushHTTP(items(item("cap", "p", "go")))
	for i := 0; i < 2; i++ {
		if a := <-done; len(a.Messages) != 1 {
			t.Fatalf("parked read answered %+v", a)
		}
	}
}

// A push over more distinct partitions than the cap is refused whole, and
// says how many it named.
func TestPartitionCapPerRequest(t *testing.T) {
	n := newNode(t, nodeOpts{})
	var parts []string
	for i := 0; i < 1001; i++ {
		parts = append(parts, item("wide", "p"+strconv.Itoa(i), ""))
	}
	status, out := n.post("/api/v1/push", []byte(items(parts...)))
	if status != http.StatusBadRequest || !strings.Contains(string(out), "the request names 1001 partitions; at most 1000 per request") {
		t.Fatalf("1001 partitions: %d %s", status, out)
	}
	if c := n.count(`SELECT count(*) FROM queen.log_partitions`); c != 0 {
		t.Fatalf("%d partitions made by a refused push", c)
	}
	// 1,000 partitions, many items each: fine, and every item is answered.
	parts = parts[:1000]
	parts = append(parts, parts...)
	rs := n.pushHTTP(items(parts...))
	queued := 0
	for _, r := range rs {
		if r.Status == "queued" {
			queued++
		}
	}
	if len(rs) != 2000 || queued != 2000 {
		t.Fatalf("%d answers, %d queued", len(rs), queued)
	}
}
