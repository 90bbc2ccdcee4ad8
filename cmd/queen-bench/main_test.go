package main

import (
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
	err := run(options{transport: "http", httpAddr: strings.TrimPrefix(srv.URL, "http://"), clients: 4, items: 3,
		partitions: 7, queues: 2, payload: 100, duration: 300 * time.Millisecond, run: "t"}, &report)
	if err != nil {
		t.Fatal(err)
	}
	if bad != "" {
		t.Fatal(bad)
	}
	out := report.String()
	if !strings.Contains(out, "status     queued") || strings.Contains(out, "duplicate") || !strings.Contains(out, "errors 0") {
		t.Fatalf("report:\n%s", out)
	}
	if len(seen) < 3 {
		t.Fatalf("only %d items sent", len(seen))
	}
}

func TestBenchRejectsBadOptions(t *testing.T) {
	if err := run(options{transport: "http", clients: 0, items: 1, partitions: 1, queues: 1}, &strings.Builder{}); err == nil {
		t.Fatal("zero clients must be refused")
	}
	if err := run(options{transport: "carrier-pigeon", clients: 1, items: 1, partitions: 1, queues: 1}, &strings.Builder{}); err == nil {
		t.Fatal("an unknown transport must be refused")
	}
}
