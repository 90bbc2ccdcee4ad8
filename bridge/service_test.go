package bridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/embedded"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

func TestMicroInfoListsThePushEndpoint(t *testing.T) {
	srv, err := embedded.StartNATS(embedded.NATSConfig{Listen: "-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	n := newNode(t, nodeOpts{natsURL: srv.ClientURL(), prefix: "queen"})
	msg, err := n.nc.Request("$SRV.INFO.queen-bridge", nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Name      string
		Endpoints []struct {
			Name, Subject string
			QueueGroup    string `json:"queue_group"`
		}
	}
	if err := json.Unmarshal(msg.Data, &info); err != nil {
		t.Fatal(err)
	}
	subjects := map[string]string{}
	for _, e := range info.Endpoints {
		subjects[e.Subject] = e.QueueGroup
	}
	if info.Name != "queen-bridge" || subjects["queen.v1.push"] != "queen-bridge" || subjects["queen.v1.push.*"] != "queen-bridge" {
		t.Fatalf("service info: %s", msg.Data)
	}
}

// nats micro stats counts every request an endpoint took: pushes on the
// shared subject and on a tenant's, refused ones among them, and requests of
// other endpoints, each under its own endpoint. (Its error count stays 0:
// answers, errors included, are published by the bridge itself, often after
// the handler returned; docs/api.md.)
func TestMicroStatsCountTheRequestsSent(t *testing.T) {
	srv, err := embedded.StartNATS(embedded.NATSConfig{Listen: "-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	n := newNode(t, nodeOpts{natsURL: srv.ClientURL(), prefix: "queen"})
	const shared, tenant, bad, pops = 7, 3, 2, 4
	for i := range shared {
		n.natsPush([]byte(items(item("stats.q", "p", fmt.Sprint("s", i)))), "")
	}
	for i := range tenant {
		n.natsPush([]byte(items(item("stats.q", "p", fmt.Sprint("t", i)))), ".00000000-0000-0000-0000-000000000000")
	}
	for range bad {
		if m := n.natsPush([]byte(`{"items":[{"queue":""}]}`), ""); m.Header.Get("Nats-Service-Error-Code") != "400" {
			t.Fatalf("a bad push: %q %s", m.Header, m.Data)
		}
	}
	for range pops {
		if _, err := n.nc.Request("queen.v1.pop", []byte(`{"queue":"stats.q","consumerGroup":"g","batch":1}`), 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	// nats micro counts a request only after its handler has returned, and
	// the answer may have reached the client by then (the handler or a
	// worker it handed the request to answers it): the counts are read
	// until they are exactly what was sent.
	want := map[string]int{"push": shared + bad, "push-tenant": tenant, "pop": pops, "ack": 0}
	var raw []byte
	defer func() {
		if t.Failed() {
			t.Logf("the last stats: %s", raw)
		}
	}()
	testkit.WaitFor(t, fmt.Sprintf("the endpoints' request counts %v", want), 10*time.Second, func() bool {
		var got map[string]int
		got, raw = microRequests(t, n.nc)
		for name, w := range want {
			if got[name] != w {
				return false
			}
		}
		return true
	})
}

// microRequests asks the service's stats for each endpoint's request count
// and returns them by endpoint name, with the raw answer.
func microRequests(t *testing.T, nc *nats.Conn) (map[string]int, []byte) {
	t.Helper()
	msg, err := nc.Request("$SRV.STATS.queen-bridge", nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var stats struct {
		Name      string
		Endpoints []struct {
			Name     string
			Requests int `json:"num_requests"`
		}
	}
	if err := json.Unmarshal(msg.Data, &stats); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, e := range stats.Endpoints {
		got[e.Name] = e.Requests
	}
	return got, msg.Data
}

func TestHealth(t *testing.T) {
	n := newNode(t, nodeOpts{})
	status, out := n.get("/health")
	if status != http.StatusOK || !strings.Contains(string(out), `"status":"healthy"`) {
		t.Fatalf("%d %s", status, out)
	}
	n.db.Close()
	status, out = n.get("/health")
	if status != http.StatusServiceUnavailable || !strings.Contains(string(out), `"postgres":"down"`) {
		t.Fatalf("database closed: %d %s", status, out)
	}
}

func metricValue(t testing.TB, n *node, name string) float64 {
	t.Helper()
	v, ok := exposed(t, n, name)
	if !ok {
		t.Fatalf("metric %s not exposed", name)
	}
	return v
}

// exposed reads one sample of the node's exposition; false when it is not
// there (a labelled counter nothing has touched yet, say).
func exposed(t testing.TB, n *node, name string) (float64, bool) {
	t.Helper()
	_, out := n.get("/metrics/prometheus")
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` ([0-9.e+-]+)$`)
	m := re.FindSubmatch(out)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v, true
}

func TestMetricsArePresentAndMove(t *testing.T) {
	n := newNode(t, nodeOpts{})
	n.pushHTTP(items(item("m", "p", "warm")))
	moving := []string{
		`queen_push_requests_total{transport="http"}`,
		`queen_push_items_total{status="queued"}`,
		`queen_batch_items_fired_total`,
		`queen_fusion_commits_total`,
		`queen_fusion_segments_total`,
		`queen_fusion_items_per_batch_count`,
		`queen_push_duration_seconds_count{transport="http"}`,
	}
	before := map[string]float64{}
	for _, m := range moving {
		before[m] = metricValue(t, n, m)
	}
	n.pushHTTP(items(item("m", "p", "a"), item("m", "p2", "b")))
	for _, m := range moving {
		if after := metricValue(t, n, m); after <= before[m] {
			t.Errorf("%s did not move: %v -> %v", m, before[m], after)
		}
	}
	for _, present := range []string{"queen_vegas_limit", "queen_fusion_bundles_in_flight", "queen_fusion_pending_bytes"} {
		metricValue(t, n, present)
	}
	n.natsPush([]byte(items(item("m", "p", "c"))), "")
	if metricValue(t, n, `queen_push_requests_total{transport="nats"}`) < 1 {
		t.Error("nats requests not counted")
	}
}

// 2,000 requests in flight at once over NATS: each is answered, and the
// bridge does not grow a goroutine per request while they wait.
func TestTwoThousandConcurrentNATSRequests(t *testing.T) {
	n := newNode(t, nodeOpts{})
	const requests = 2000
	client, err := nats.Connect(n.nc.ConnectedUrl())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	inbox := nats.NewInbox()
	var answered, queued atomic.Int64
	sub, err := client.Subscribe(inbox+".*", func(m *nats.Msg) {
		var rs []result
		if json.Unmarshal(m.Data, &rs) == nil && len(rs) == 1 && rs[0].Status == "queued" {
			queued.Add(1)
		}
		answered.Add(1)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		t.Fatal(err)
	}
	baseline := runtime.NumGoroutine()
	peak := baseline
	for i := 0; i < requests; i++ {
		body := []byte(items(item("burst", fmt.Sprintf("p%d", i%50), fmt.Sprint(i))))
		if err := client.PublishRequest(n.prefix+".v1.push", fmt.Sprintf("%s.%d", inbox, i), body); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.Flush(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for answered.Load() < requests && time.Now().Before(deadline) {
		peak = max(peak, runtime.NumGoroutine())
		time.Sleep(2 * time.Millisecond)
	}
	if answered.Load() != requests || queued.Load() != requests {
		t.Fatalf("%d answered, %d queued, of %d", answered.Load(), queued.Load(), requests)
	}
	t.Logf("goroutines: %d before, %d at most during %d requests in flight", baseline, peak, requests)
	if peak-baseline > 200 {
		t.Fatalf("goroutines grew by %d for %d requests: handlers are not bounded", peak-baseline, requests)
	}
	if c := n.count(`SELECT coalesce(sum(last_offset), 0) FROM queen.log_partitions`); c != requests {
		t.Fatalf("%d messages stored, want %d", c, requests)
	}
	_ = context.Background
}
