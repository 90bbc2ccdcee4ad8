package bridge_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/segment"
)

// Queen's queue resource, status and maintenance routes (docs/admin.md),
// over HTTP as Queen's clients send them.

func (n *node) del(path string, header ...string) (int, []byte) {
	n.t.Helper()
	return n.call(http.MethodDelete, path, nil, header...)
}

// getJSON GETs path, wants 200 and decodes the answer into v.
func (n *node) getJSON(path string, v any, header ...string) {
	n.t.Helper()
	n.callJSON(http.MethodGet, path, nil, v, header...)
}

type counts struct {
	Total      int64 `json:"total"`
	Pending    int64 `json:"pending"`
	Processing int64 `json:"processing"`
	Completed  int64 `json:"completed"`
	Failed     int64 `json:"failed"`
	DeadLetter int64 `json:"deadLetter"`
}

type queueSummary struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Namespace  string `json:"namespace"`
	Task       string `json:"task"`
	CreatedAt  string `json:"createdAt"`
	Partitions int64  `json:"partitions"`
	Messages   counts `json:"messages"`
}

type queueDetail struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Partitions []struct {
		ID            string  `json:"id"`
		Name          string  `json:"name"`
		Stats         counts  `json:"stats"`
		OldestMessage *string `json:"oldestMessage"`
		NewestMessage *string `json:"newestMessage"`
	} `json:"partitions"`
	Totals counts `json:"totals"`
}

// The counts follow pushes, a pop under a lease and acknowledgements, in
// every answer that carries them; queues list newest first; namespaces and
// tasks sum their queues; a percent-encoded name reaches its queue.
func TestQueueResourcesCount(t *testing.T) {
	n := newNode(t, nodeOpts{})
	n.pushHTTP(items(item("billing", "p", "b1")))
	n.pushHTTP(items(item("orders.us", "p", "u1")))
	n.pushHTTP(items(item("orders.eu", "p1", "e1"), item("orders.eu", "p1", "e2"), item("orders.eu", "p1", "e3"), item("orders.eu", "p2", "e4")))
	odd := "odd name/with slash"
	n.pushHTTP(items(item(odd, "p", "o1")))

	status, p := n.popHTTP("orders.eu", "p1", "batch", "2")
	if status != http.StatusOK || len(p.Messages) != 2 {
		t.Fatalf("pop: %d %+v", status, p)
	}
	var first popped
	first.Messages = p.Messages[:1]
	if a := n.ackAll(first, "", nil); !a[0].Success {
		t.Fatalf("ack: %+v", a)
	}
	// e1 acknowledged, e2 under the lease, e3 and e4 pending.
	want := counts{Total: 4, Pending: 2, Processing: 1, Completed: 1}

	var list struct{ Queues []queueSummary }
	n.getJSON("/api/v1/resources/queues", &list)
	if len(list.Queues) != 4 || list.Queues[0].Name != odd || list.Queues[1].Name != "orders.eu" || list.Queues[3].Name != "billing" {
		t.Fatalf("list: %+v", list.Queues)
	}
	eu := list.Queues[1]
	if eu.Namespace != "orders" || eu.Task != "eu" || eu.Partitions != 2 || eu.ID == "" || eu.CreatedAt == "" ||
		eu.Messages != (counts{Total: 4, Pending: 2, Processing: 1}) {
		t.Fatalf("orders.eu in the list: %+v", eu)
	}

	var d queueDetail
	n.getJSON("/api/v1/resources/queues/orders.eu", &d)
	if d.Name != "orders.eu" || d.ID != eu.ID || len(d.Partitions) != 2 || d.Totals != want {
		t.Fatalf("detail: %+v", d)
	}
	p1 := d.Partitions[0]
	if p1.Name != "p1" {
		p1 = d.Partitions[1]
	}
	if p1.Name != "p1" || p1.ID != p.PartitionID || p1.Stats != (counts{Total: 3, Pending: 1, Processing: 1, Completed: 1}) ||
		p1.OldestMessage == nil || p1.NewestMessage == nil {
		t.Fatalf("p1: %+v", p1)
	}
	n.getJSON("/api/v1/resources/queues/"+url.PathEscape(odd), &d)
	if d.Name != odd || d.Totals.Total != 1 {
		t.Fatalf("a percent-encoded name: %+v", d)
	}
	if status, out := n.get("/api/v1/resources/queues/nope"); status != http.StatusNotFound || string(out) != `{"error":"Queue not found"}` {
		t.Fatalf("unknown queue: %d %s", status, out)
	}

	var ns struct {
		Namespaces []struct {
			Namespace  string `json:"namespace"`
			Queues     int64  `json:"queues"`
			Partitions int64  `json:"partitions"`
			Messages   counts `json:"messages"`
		} `json:"namespaces"`
	}
	n.getJSON("/api/v1/resources/namespaces", &ns)
	if len(ns.Namespaces) != 3 || ns.Namespaces[2].Namespace != "orders" || ns.Namespaces[2].Queues != 2 || ns.Namespaces[2].Partitions != 3 ||
		ns.Namespaces[2].Messages != (counts{Total: 5, Pending: 3}) {
		t.Fatalf("namespaces: %+v", ns)
	}
	var tasks struct {
		Tasks []struct {
			Task   string `json:"task"`
			Queues int64  `json:"queues"`
		} `json:"tasks"`
	}
	n.getJSON("/api/v1/resources/tasks", &tasks)
	if len(tasks.Tasks) != 2 || tasks.Tasks[0].Task != "eu" || tasks.Tasks[1].Task != "us" {
		t.Fatalf("tasks: %+v", tasks)
	}

	var ov struct {
		Queues, Partitions, Namespaces, Tasks int64
		Messages                              counts
		Lag                                   struct{ Offset struct{ Max float64 } }
		Throughput                            map[string]float64
		Timestamp                             string
		StatsAge                              *int64
	}
	n.getJSON("/api/v1/resources/overview", &ov)
	if ov.Queues != 4 || ov.Partitions != 5 || ov.Namespaces != 3 || ov.Tasks != 2 ||
		ov.Messages != (counts{Total: 7, Pending: 5, Processing: 1, Completed: 1}) || ov.Lag.Offset.Max != 2 ||
		len(ov.Throughput) != 2 || ov.Timestamp == "" || ov.StatsAge == nil {
		t.Fatalf("overview: %+v", ov)
	}

	// The status routes carry the same counts.
	var st struct {
		TimeRange       struct{ From, To string }
		BucketMinutes   int
		Throughput      []any
		Queues          []struct{ Name string }
		Messages        counts
		Leases          struct{ Active, PartitionsWithLeases, TotalBatchSize, TotalAcked int64 }
		DeadLetterQueue struct{ TotalMessages int64 }
		Workers         []any
	}
	n.getJSON("/api/v1/status?namespace=orders", &st)
	if st.TimeRange.From == "" || st.BucketMinutes != 1 || st.Throughput == nil || len(st.Queues) != 2 || st.Workers == nil ||
		st.Messages != (counts{Total: 5, Pending: 3, Processing: 1, Completed: 1}) ||
		st.Leases.Active != 1 || st.Leases.PartitionsWithLeases != 1 || st.Leases.TotalBatchSize != 2 || st.Leases.TotalAcked != 1 {
		t.Fatalf("status: %+v", st)
	}
	if status, out := n.get("/api/v1/status?from=yesterday"); status != http.StatusBadRequest || !strings.Contains(string(out), "from must be an RFC 3339 time") {
		t.Fatalf("a bad from: %d %s", status, out)
	}
	var sq struct {
		Queues     []queueSummary
		Pagination struct{ Limit, Offset int }
	}
	n.getJSON("/api/v1/status/queues?limit=2&offset=1", &sq)
	if len(sq.Queues) != 2 || sq.Queues[0].Name != "orders.eu" || sq.Pagination.Limit != 2 || sq.Pagination.Offset != 1 {
		t.Fatalf("status/queues: %+v", sq)
	}
	var sd struct {
		Queue struct {
			Name   string
			Config struct{ LeaseTime, RetryLimit, TTL any }
		}
		Partitions []struct {
			Name     string
			Messages counts
			Cursor   struct{ TotalConsumed int64 }
		}
		Totals struct {
			Messages counts
			Total    int64
		}
	}
	n.getJSON("/api/v1/status/queues/orders.eu", &sd)
	if sd.Queue.Name != "orders.eu" || sd.Queue.Config.LeaseTime != float64(300) || sd.Queue.Config.TTL != nil || len(sd.Partitions) != 2 ||
		sd.Partitions[0].Cursor.TotalConsumed+sd.Partitions[1].Cursor.TotalConsumed != 1 || sd.Totals.Messages != want || sd.Totals.Total != 4 {
		t.Fatalf("status/queues/orders.eu: %+v", sd)
	}
	if status, _ := n.get("/api/v1/status/queues/nope"); status != http.StatusNotFound {
		t.Fatalf("status of an unknown queue: %d", status)
	}
}

// Another tenant's token sees nothing of a queue; the admin routes refuse
// tenant tokens; an admin deletes only its own tenant's queue.
func TestQueueResourcesAreTenantScoped(t *testing.T) {
	tenantA, tenantB := uuid.New(), uuid.New()
	n := newNode(t, nodeOpts{
		tokens: map[string]tenancy.TenantID{"tok-a": tenancy.TenantID(tenantA), "tok-b": tenancy.TenantID(tenantB)},
		admins: map[string]tenancy.TenantID{"adm-a": tenancy.TenantID(tenantA), "adm-b": tenancy.TenantID(tenantB)},
	})
	a, b := []string{"Authorization", "Bearer tok-a"}, []string{"Authorization", "Bearer tok-b"}
	admB := []string{"Authorization", "Bearer adm-b"}
	if status, out := n.post("/api/v1/push", []byte(items(item("shared.q", "p", "x"))), a...); status != http.StatusCreated {
		t.Fatalf("push as A: %d %s", status, out)
	}
	var list struct{ Queues []queueSummary }
	n.getJSON("/api/v1/resources/queues", &list, b...)
	if len(list.Queues) != 0 {
		t.Fatalf("B lists %+v", list.Queues)
	}
	n.getJSON("/api/v1/resources/queues", &list, a...)
	if len(list.Queues) != 1 || list.Queues[0].Messages.Total != 1 {
		t.Fatalf("A lists %+v", list.Queues)
	}
	for _, path := range []string{"/api/v1/resources/queues/shared.q", "/api/v1/status/queues/shared.q"} {
		if status, _ := n.get(path, b...); status != http.StatusNotFound {
			t.Fatalf("B reads %s: %d", path, status)
		}
	}
	var ov struct{ Queues int64 }
	n.getJSON("/api/v1/resources/overview", &ov, b...)
	if ov.Queues != 0 {
		t.Fatalf("B's overview: %+v", ov)
	}
	// Admin routes: a tenant token is refused, and nothing changes.
	for _, c := range []struct{ method, path, body string }{
		{"DELETE", "/api/v1/resources/queues/shared.q", ""},
		{"POST", "/api/v1/stats/refresh", "{}"},
		{"GET", "/api/v1/system/maintenance", ""},
		{"POST", "/api/v1/system/maintenance", `{"enabled":true}`},
		{"GET", "/api/v1/system/maintenance/pop", ""},
		{"POST", "/api/v1/system/maintenance/pop", `{"enabled":true}`},
	} {
		var body []byte
		if c.body != "" {
			body = []byte(c.body)
		}
		status, out, err := n.send(c.method, c.path, body, a...)
		if err != nil || status != http.StatusForbidden || !strings.Contains(string(out), "admin tokens only") {
			t.Errorf("%s %s with a tenant token: %d %s %v", c.method, c.path, status, out, err)
		}
	}
	if status, out := n.post("/api/v1/stats/refresh", []byte(`{}`), admB...); status != http.StatusOK || string(out) != `{"success":true}` {
		t.Fatalf("stats refresh as an admin: %d %s", status, out)
	}
	// B's admin deletes B's queue of that name: there is none; A's stays.
	if status, out := n.del("/api/v1/resources/queues/shared.q", admB...); status != http.StatusOK || string(out) != `{"deleted":true,"queue":"shared.q","existed":false}` {
		t.Fatalf("delete as B's admin: %d %s", status, out)
	}
	n.getJSON("/api/v1/resources/queues", &list, a...)
	if len(list.Queues) != 1 {
		t.Fatalf("A's queue after B's delete: %+v", list.Queues)
	}
	if status, out := n.del("/api/v1/resources/queues/shared.q", "Authorization", "Bearer adm-a"); status != http.StatusOK || string(out) != `{"deleted":true,"queue":"shared.q","existed":true}` {
		t.Fatalf("delete as A's admin: %d %s", status, out)
	}
	if c := n.count(`SELECT count(*) FROM queen.queues`); c != 0 {
		t.Fatalf("%d queues after the delete", c)
	}
}

// The client methods Queen registers no route for answer 404 "not a Queen
// route".
func TestClientMethodsWithNoQueenRoute(t *testing.T) {
	n := newNode(t, nodeOpts{})
	for _, c := range []struct{ method, path string }{
		{"DELETE", "/api/v1/queues/q/clear"},
		{"GET", "/api/v1/resources/partitions"},
		{"POST", "/api/v1/messages/17/t-1/retry"},
		{"POST", "/api/v1/messages/17/t-1/dlq"},
	} {
		var body []byte
		if c.method == "POST" {
			body = []byte(`{}`)
		}
		status, out, err := n.send(c.method, c.path, body)
		if err != nil || status != http.StatusNotFound || string(out) != `{"error":"not a Queen route"}` {
			t.Errorf("%s %s: %d %s %v", c.method, c.path, status, out, err)
		}
	}
}

// A queue deleted through one bridge is gone for pushes, pops and reads on
// every bridge: reads and pops parked on it on the other bridge answer at
// once; a push afterwards makes a fresh, empty queue (a repeat of a
// transactionId of the deleted queue is stored again, from offset 1); what
// either bridge kept of the old queue (settings, the hot tail, the
// consumer marks, the hashes it wrote) serves nothing of it.
func TestDeletedQueueIsGoneOnEveryBridge(t *testing.T) {
	a := newNode(t, nodeOpts{})
	b := newNode(t, nodeOpts{dsn: a.db.Pool().Config().ConnConfig.ConnString(), prefix: a.prefix})
	// Written through both bridges, popped and read through b, so that b
	// holds the partitions in its hot tail, its marks and its fusion.
	a.pushHTTP(items(item("gone", "p1", "x"), item("gone", "p1", "y")))
	b.pushHTTP(items(item("gone", "p1", "z"), item("gone", "p2", "w")))
	if status, p := b.popHTTP("gone", "", "batch", "10", "partitions", "2", "consumerGroup", "g", "autoAck", "true"); status != http.StatusOK || len(p.Messages) == 0 {
		t.Fatalf("pop before the delete: %d %+v", status, p)
	}
	for status, _ := b.popHTTP("gone", "", "batch", "10", "partitions", "2", "consumerGroup", "g", "autoAck", "true"); status == http.StatusOK; status, _ = b.popHTTP("gone", "", "batch", "10", "partitions", "2", "consumerGroup", "g", "autoAck", "true") {
	}
	if r := b.read("queue=gone&partition=p1&from=1"); len(r.Messages) != 3 {
		t.Fatalf("read before the delete: %+v", r)
	}

	// Parked on b: a pop of the drained group, and a read past the end.
	type answer struct {
		status int
		body   []byte
		err    error
	}
	pop, read := make(chan answer, 1), make(chan answer, 1)
	parked := metricValue(t, b, "queen_parked_reads")
	go func() {
		s, out, err := b.send("GET", "/api/v1/pop/queue/gone?consumerGroup=g&wait=true&timeout=240000", nil)
		pop <- answer{s, out, err}
	}()
	go func() {
		s, out, err := b.send("GET", "/api/v1/messages?queue=gone&partition=p1&from=4&waitMs=240000", nil)
		read <- answer{s, out, err}
	}()
	testkit.WaitFor(t, "the pop and the read to park on b", time.Minute, func() bool { return metricValue(t, b, "queen_parked_reads") >= parked+2 })

	if status, out := a.del("/api/v1/resources/queues/gone"); status != http.StatusOK || string(out) != `{"deleted":true,"queue":"gone","existed":true}` {
		t.Fatalf("delete through a: %d %s", status, out)
	}
	for name, ch := range map[string]chan answer{"pop": pop, "read": read} {
		select {
		case r := <-ch:
			if r.err != nil || (name == "pop" && r.status != http.StatusNoContent) || (name == "read" && (r.status != http.StatusOK || !strings.Contains(string(r.body), `"messages":[]`))) {
				t.Fatalf("parked %s on b after the delete: %d %s %v", name, r.status, r.body, r.err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("the %s parked on b did not answer after the delete", name)
		}
	}
	for _, n := range []*node{a, b} {
		if status, _ := n.get("/api/v1/resources/queues/gone"); status != http.StatusNotFound {
			t.Fatalf("the deleted queue is still found: %d", status)
		}
		if r := n.read("queue=gone&partition=p1&from=1"); len(r.Messages) != 0 {
			t.Fatalf("a read after the delete: %+v", r)
		}
		if status, p := n.popHTTP("gone", "p1"); status != http.StatusNoContent {
			t.Fatalf("a pop after the delete: %d %+v", status, p)
		}
	}
	testkit.WaitFor(t, "the deleted queue's segments to be purged", time.Minute, func() bool {
		return a.count(`SELECT count(*) FROM queen.log_segments`)+a.count(`SELECT count(*) FROM queen.log_purges`) == 0
	})

	// Another writer (here the database directly, as a bridge that is not
	// one of these two) makes the queue anew with p2: pops of it by name
	// reach the new partition on both bridges, whatever either kept of
	// the old p2 (the hot tail maps names to partition ids).
	fr := []segment.Frame{{ID: uuid.Must(uuid.NewV7()), TransactionID: "w2", Payload: []byte(`1`)}}
	if _, err := a.db.PushBundle(context.Background(), []segment.Write{{Queue: "gone", Partition: "p2", Count: 1,
		Hashes: segment.AppendHashes(nil, fr), Blob: segment.Pack(nil, fr)}}); err != nil {
		t.Fatal(err)
	}
	for i, n := range []*node{a, b} {
		status, p := n.popHTTP("gone", "p2", "consumerGroup", fmt.Sprint("p2-", i))
		if status != http.StatusOK || len(p.Messages) != 1 || p.Messages[0].TransactionID != "w2" {
			t.Fatalf("pop of the new p2 by name through bridge %d: %d %+v", i, status, p)
		}
	}

	// A push makes the queue anew: repeats of the deleted queue's
	// transactionIds are new messages, through either bridge, from offset 1.
	for i, n := range []*node{b, a} {
		for _, tx := range []string{"x", "z"} {
			r := n.pushHTTP(items(item("gone", "p1", tx)))[0]
			wantOff := map[string]int64{"x": 1, "z": 2}[tx]
			if (i == 0 && (r.Status != "queued" || r.Offset != wantOff)) || (i == 1 && (r.Status != "duplicate" || r.Offset != wantOff)) {
				t.Fatalf("push of %s through bridge %d after the delete: %+v", tx, i, r)
			}
		}
	}
	var d queueDetail
	a.getJSON("/api/v1/resources/queues/gone", &d)
	if len(d.Partitions) != 2 || d.Partitions[1].Name != "p1" || d.Totals != (counts{Total: 3, Pending: 2, Processing: 1}) {
		t.Fatalf("the new queue: %+v", d)
	}
	// The group starts again on the new queue, through b.
	status, p := b.popHTTP("gone", "p1", "batch", "10", "consumerGroup", "g")
	if status != http.StatusOK || len(p.Messages) != 2 || p.Messages[0].TransactionID != "x" || p.PartitionID != d.Partitions[1].ID {
		t.Fatalf("pop of the new queue on b: %d %+v", status, p)
	}
	if r := b.read("queue=gone&partition=p1&from=1"); len(r.Messages) != 2 || r.Messages[1].TransactionID != "z" {
		t.Fatalf("read of the new queue on b: %+v", r)
	}
	// A pop of the partition by name, on the bridge that wrote the old
	// one (its hot tail held it) and on the other.
	for i, n := range []*node{a, b} {
		status, p := n.popHTTP("gone", "p1", "batch", "10", "consumerGroup", fmt.Sprint("by-name-", i))
		if status != http.StatusOK || len(p.Messages) != 2 || p.PartitionID != d.Partitions[1].ID {
			t.Fatalf("pop of p1 by name through bridge %d: %d %+v", i, status, p)
		}
	}
}

// Pop maintenance, switched through one bridge, makes every pop on every
// bridge answer 204 while messages wait; switched off, pops deliver again.
// Its switch needs {"enabled": bool}, as maintenance's does over HTTP.
func TestPopMaintenanceHoldsEveryBridge(t *testing.T) {
	a := newNode(t, nodeOpts{})
	b := newNode(t, nodeOpts{dsn: a.db.Pool().Config().ConnConfig.ConnString(), prefix: a.prefix})
	a.pushHTTP(items(item("pm", "p", "m1"), item("pm", "p", "m2")))
	for _, path := range []string{"/api/v1/system/maintenance/pop", "/api/v1/system/maintenance"} {
		for _, body := range []string{`{}`, `{"enabled":"yes"}`, `not json`} {
			if status, out := a.post(path, []byte(body)); status != http.StatusBadRequest || string(out) != `{"error":"enabled (boolean) is required"}` {
				t.Fatalf("POST %s %s: %d %s", path, body, status, out)
			}
		}
	}
	if status, out := a.post("/api/v1/system/maintenance/pop", []byte(`{"enabled":true}`)); status != http.StatusOK ||
		!strings.HasPrefix(string(out), `{"popMaintenanceMode":true,"message":`) {
		t.Fatalf("pop maintenance on: %d %s", status, out)
	}
	testkit.WaitFor(t, "b to hear pop maintenance on", time.Minute, func() bool {
		_, out := b.get("/api/v1/system/maintenance/pop")
		return strings.Contains(string(out), `"popMaintenanceMode":true`)
	})
	var m struct {
		MaintenanceMode    bool
		PopMaintenanceMode bool
		BufferedMessages   *int64
		BufferHealthy      *bool
		BufferStats        struct{ PendingCount *int64 }
	}
	b.getJSON("/api/v1/system/maintenance", &m)
	if m.MaintenanceMode || !m.PopMaintenanceMode || m.BufferedMessages == nil || m.BufferHealthy == nil || m.BufferStats.PendingCount == nil {
		t.Fatalf("maintenance during pop maintenance: %+v", m)
	}
	for _, n := range []*node{a, b} {
		for _, part := range []string{"", "p"} {
			if status, _ := n.popHTTP("pm", part); status != http.StatusNoContent {
				t.Fatalf("a pop in pop maintenance: %d", status)
			}
		}
	}
	if r := b.pushHTTP(items(item("pm", "p", "m3")))[0]; r.Status != "queued" {
		t.Fatalf("a push in pop maintenance: %+v", r)
	}
	if status, out := b.post("/api/v1/system/maintenance/pop", []byte(`{"enabled":false}`)); status != http.StatusOK || !strings.Contains(string(out), `"popMaintenanceMode":false`) {
		t.Fatalf("pop maintenance off: %d %s", status, out)
	}
	testkit.WaitFor(t, "a to hear pop maintenance off", time.Minute, func() bool {
		_, out := a.get("/api/v1/system/maintenance/pop")
		return strings.Contains(string(out), `"popMaintenanceMode":false`)
	})
	status, p := a.popHTTP("pm", "", "batch", "10")
	if status != http.StatusOK || len(p.Messages) != 3 {
		t.Fatalf("a pop after pop maintenance: %d %+v", status, p)
	}
}
