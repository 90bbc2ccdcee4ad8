package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The HTTP floor answers each push of a kept-alive connection with one
// status per item, after its delay, and stops with its context.
func TestServeEchoHTTPAnswersEveryItem(t *testing.T) {
	first, stop := startEcho(t, "http://127.0.0.1:0", 5*time.Millisecond)
	m := regexp.MustCompile(`^echo http://(127\.0\.0\.1:\d+) pid \d+ delay 5ms\n$`).FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("first line %q", first)
	}
	ctx := context.Background()
	tgt, err := newBridgeTarget(options{transport: "http", httpAddr: m[1], clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.close()
	for n := 1; n <= 3; n++ {
		items := make([]item, n)
		for i := range items {
			items[i] = item{queue: "q", partition: "p", txid: "t", payload: []byte(`{"k":"{\"queue\":"}`)}
		}
		start := time.Now()
		counts, err := tgt.push(ctx, 0, items)
		if err != nil {
			t.Fatal(err)
		}
		if len(counts) != 1 || counts["queued"] != int64(n) {
			t.Fatalf("push of %d: counts %v", n, counts)
		}
		if time.Since(start) < 5*time.Millisecond {
			t.Fatalf("push of %d answered before the delay", n)
		}
	}
	if err := stop(); err != nil {
		t.Fatalf("serveEcho after cancel: %v", err)
	}
}

// With -rate the push side sends exactly the timetable's requests (items /
// rate apart over the run, none due after its end), whichever client is
// free, and says so in the report.
func TestOpenLoopPushSendsTheTimetable(t *testing.T) {
	first, stop := startEcho(t, "http://127.0.0.1:0", time.Millisecond)
	addr := regexp.MustCompile(`http://(\S+) `).FindStringSubmatch(first)[1]
	ctx := context.Background()
	var report strings.Builder
	r, err := run(ctx, options{target: "bridge", transport: "http", httpAddr: addr, clients: 4, items: 2, partitions: 3, queues: 1,
		payload: 20, duration: 500 * time.Millisecond, rate: 400, run: "t"}, &report)
	if err != nil {
		t.Fatal(err)
	}
	// 400 items/s in requests of 2: one due every 5 ms, 100 in 500 ms.
	if r.requests != 100 || r.items != 200 || r.errs != 0 {
		t.Fatalf("%d requests, %d items, %d errors; want 100, 200, 0\n%s", r.requests, r.items, r.errs, report.String())
	}
	if !strings.Contains(report.String(), "open loop at 400 items/s") || !strings.Contains(report.String(), " of 100 requests sent more than") {
		t.Fatalf("report:\n%s", report.String())
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
