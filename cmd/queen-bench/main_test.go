package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// queen-bench against a stand-in for the bridge: every body it sends is a
// valid push of the asked number of items with unique transactionIds, and
// the report adds up what came back.
func TestBenchSendsValidPushesAndReports(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	bad := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Items []struct {
				Queue, Partition, TransactionID string
				Payload                         json.RawMessage
			} `json:"items"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Items) != 3 {
			mu.Lock()
			bad = fmt.Sprintf("body: %v, %d items", err, len(body.Items))
			mu.Unlock()
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		out := make([]map[string]string, len(body.Items))
		mu.Lock()
		for i, it := range body.Items {
			status := "queued"
			if seen[it.TransactionID] || !json.Valid(it.Payload) || len(it.Payload) != 100 || !strings.HasPrefix(it.Queue, "bench.q") {
				status = "duplicate"
			}
			seen[it.TransactionID] = true
			out[i] = map[string]string{"status": status}
		}
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(out)
	}))
	defer srv.Close()

	var report strings.Builder
	_, err := run(context.Background(), options{target: "bridge", transport: "http", httpAddr: strings.TrimPrefix(srv.URL, "http://"), clients: 4, items: 3,
		partitions: 7, queues: 2, payload: 100, duration: 300 * time.Millisecond, run: "t",
		pgDSN: "postgres://nobody@127.0.0.1:1/none?connect_timeout=2"}, &report)
	if err != nil {
		t.Fatal(err)
	}
	if bad != "" {
		t.Fatal(bad)
	}
	out := report.String()
	if !strings.Contains(out, "status     queued") || strings.Contains(out, "duplicate") || !strings.Contains(out, "errors 0") ||
		!strings.Contains(out, "note: no PostgreSQL CPU per item: ") {
		t.Fatalf("report:\n%s", out)
	}
	if len(seen) < 3 {
		t.Fatalf("only %d items sent", len(seen))
	}
}

func TestBenchRejectsBadOptions(t *testing.T) {
	ok := options{target: "bridge", transport: "http", clients: 1, items: 1, partitions: 1, queues: 1, duration: time.Second}
	for name, o := range map[string]options{
		"zero clients":          func() options { o := ok; o.clients = 0; return o }(),
		"an unknown transport":  func() options { o := ok; o.transport = "carrier-pigeon"; return o }(),
		"an unknown target":     func() options { o := ok; o.target = "fax"; return o }(),
		"a baseline without DB": func() options { o := ok; o.target = "direct"; return o }(),
	} {
		if _, err := run(context.Background(), o, &strings.Builder{}); err == nil {
			t.Errorf("%s must be refused", name)
		}
	}
	if err := benchMain(context.Background(), options{compare: true}, &strings.Builder{}); err == nil {
		t.Error("-compare without -pg-dsn must be refused")
	}
	for _, o := range []options{{target: "bridge", groups: 2}, {target: "bridge", pipelineTo: "out.q"}} {
		if err := benchMain(context.Background(), o, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "-consumers") {
			t.Errorf("-groups %d -pipeline-to %q without -consumers: %v, want a refusal", o.groups, o.pipelineTo, err)
		}
	}
	for name, o := range map[string]options{
		"a negative -rate":             {target: "bridge", rate: -5},
		"-rate with -target jetstream": {target: "jetstream", rate: 10},
		"-rate with -console":          {target: "bridge", console: true, rate: 10},
	} {
		if err := benchMain(context.Background(), o, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "-rate") {
			t.Errorf("%s: %v, want a refusal naming -rate", name, err)
		}
	}
}

// With -mint the bodies carry no transactionId, so the bridge mints them.
func TestMintLeavesTransactionIDsOut(t *testing.T) {
	var mu sync.Mutex
	withID, without := 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Items []map[string]json.RawMessage `json:"items"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		for _, it := range body.Items {
			if _, ok := it["transactionId"]; ok {
				withID++
			} else {
				without++
			}
		}
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`[{"status":"queued"},{"status":"queued"}]`))
	}))
	defer srv.Close()
	_, err := run(context.Background(), options{target: "bridge", transport: "http", httpAddr: strings.TrimPrefix(srv.URL, "http://"),
		clients: 2, items: 2, partitions: 3, queues: 1, payload: 50, mint: true, duration: 200 * time.Millisecond, run: "m"}, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if withID != 0 || without == 0 {
		t.Fatalf("%d items with a transactionId, %d without", withID, without)
	}
}

// -metrics defaults to the bridge's page at -http, and "none" reads none.
func TestMetricsURLDefaultsAndNone(t *testing.T) {
	for _, c := range []struct {
		o    options
		want string
	}{
		{options{target: "bridge", httpAddr: "127.0.0.1:6632"}, "http://127.0.0.1:6632/metrics/prometheus"},
		{options{target: "bridge", httpAddr: "127.0.0.1:6632", metricsURL: "none"}, ""},
		{options{target: "jetstream", httpAddr: "127.0.0.1:6632"}, ""},
		{options{target: "bridge", metricsURL: "http://a/m,http://b/m"}, "http://a/m,http://b/m"},
	} {
		if got := metricsURL(c.o); got != c.want {
			t.Errorf("%+v: %q, want %q", c.o, got, c.want)
		}
	}
}
