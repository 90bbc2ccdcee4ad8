package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeBridge serves a Prometheus page with the fusion counters it is set to;
// a name missing from counters is left off the page.
type fakeBridge struct {
	mu       sync.Mutex
	counters map[string]float64
}

func (f *fakeBridge) set(name string, v float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counters[name] = v
}

func (f *fakeBridge) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	io.WriteString(w, "# TYPE queen_fusion_commits_total counter\n")
	for name, v := range f.counters {
		fmt.Fprintf(w, "%s %g\n", name, v)
	}
	io.WriteString(w, `queen_push_items_total{status="queued"} 99`+"\n")
}

func startFakeBridge(t *testing.T, counters map[string]float64) (*fakeBridge, string) {
	t.Helper()
	f := &fakeBridge{counters: counters}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

// A window's bundle calls are the bridges' own counts, summed over the
// bridges: commits and failed bundles, whichever statements they ran, with
// their time from queen_fusion_call_seconds_total.
func TestMeterCountsEveryBundleCall(t *testing.T) {
	t.Parallel()
	a, urlA := startFakeBridge(t, map[string]float64{
		"queen_fusion_commits_total": 100, "queen_fusion_bundle_errors_total": 1, "queen_fusion_call_seconds_total": 0.5,
	})
	b, urlB := startFakeBridge(t, map[string]float64{
		"queen_fusion_commits_total": 50, "queen_fusion_bundle_errors_total": 0, "queen_fusion_call_seconds_total": 0.25,
	})
	m := newMeter(context.Background(), options{target: "bridge", metricsURL: urlA + "," + urlB}, io.Discard)
	defer m.close()
	before := m.sample()
	if before.calls != 151 || before.callMS != 750 {
		t.Fatalf("first reading: %v calls, %v ms", before.calls, before.callMS)
	}
	a.set("queen_fusion_commits_total", 130)
	a.set("queen_fusion_bundle_errors_total", 3)
	a.set("queen_fusion_call_seconds_total", 0.566)
	b.set("queen_fusion_commits_total", 68)
	b.set("queen_fusion_call_seconds_total", 0.284)
	d := m.sample().minus(before)
	if line := d.bundleLine(); !strings.HasPrefix(line, "bundle call 2.000 ms (50 calls)") {
		t.Fatalf("window: %q (%v calls, %v ms)", line, d.calls, d.callMS)
	}

	// A bridge that does not publish the call time: the count alone is no
	// mean, so the line says n/a.
	_, urlOld := startFakeBridge(t, map[string]float64{"queen_fusion_commits_total": 7})
	old := newMeter(context.Background(), options{target: "bridge", metricsURL: urlOld}, io.Discard)
	defer old.close()
	if line := old.sample().minus(old.sample()).bundleLine(); !strings.HasPrefix(line, "bundle call n/a") {
		t.Fatalf("without queen_fusion_call_seconds_total: %q", line)
	}
}

// Against a real bridge, whose bundles after the first go through the
// known-partition statement (no function call), every -window line counts
// bundle calls and gives their mean time.
func TestWindowCountsARealBridgesBundleCalls(t *testing.T) {
	addr := startBridge(t, "w").addr
	var out strings.Builder
	_, err := run(context.Background(), options{target: "bridge", transport: "http", httpAddr: addr, metricsURL: "http://" + addr + "/metrics/prometheus",
		clients: 3, items: 5, partitions: 7, queues: 1, payload: 100, duration: 2500 * time.Millisecond, window: time.Second, run: "w"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	windows := regexp.MustCompile(`(?m)^window .*$`).FindAllString(out.String(), -1)
	if len(windows) == 0 {
		t.Fatalf("no window line:\n%s", out.String())
	}
	t.Log(strings.Join(windows, "\n"))
	call := regexp.MustCompile(`bundle call [0-9.]+ ms \((\d+) calls\)`)
	for _, w := range windows {
		m := call.FindStringSubmatch(w)
		if m == nil || m[1] == "0" {
			t.Fatalf("window without bundle calls: %q\n%s", w, out.String())
		}
	}
}
