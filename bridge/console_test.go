package bridge_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/segment"
)

// The web console's own routes (docs/console.md): this bridge's overview,
// a queue's consumers, and the requeue of dead letters.

// consoleNode is a bridge with a tenant token and an admin token for
// tenant A, and both for tenant B.
func consoleNode(t *testing.T, o nodeOpts) *node {
	a, b := tenancy.TenantID(uuid.New()), tenancy.TenantID(uuid.New())
	o.tokens = map[string]tenancy.TenantID{"tok-a": a, "tok-b": b}
	o.admins = map[string]tenancy.TenantID{"adm-a": a, "adm-b": b}
	return newNode(t, o)
}

func bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }

// as sends a request with token's bearer header.
func (n *node) as(token, method, path string, body []byte) (int, []byte) {
	n.t.Helper()
	return n.call(method, path, body, bearer(token)...)
}

// pushAs pushes items (queue, partition, transactionId, payload) as token.
func (n *node) pushAs(token string, its ...[4]string) []result {
	n.t.Helper()
	var parts []string
	for _, it := range its {
		parts = append(parts, fmt.Sprintf(`{"queue":%q,"partition":%q,"transactionId":%q,"payload":%s}`, it[0], it[1], it[2], it[3]))
	}
	status, out := n.as(token, http.MethodPost, "/api/v1/push", []byte(items(parts...)))
	if status != http.StatusCreated {
		n.t.Fatalf("push: %d %s", status, out)
	}
	return decodeResults(n.t, out)
}

// popAs pops as token; 204 is a zero popped.
func (n *node) popAs(token, queue, partition string, params ...string) popped {
	n.t.Helper()
	_, p := n.popWith(bearer(token), queue, partition, params...)
	return p
}

// ackAs acknowledges every message of p with status, as token, and
// fails the test unless each succeeded.
func (n *node) ackAs(token string, p popped, group, status string) {
	n.t.Helper()
	for _, r := range n.ackWith(bearer(token), p, group, func(string) string { return status }) {
		if !r.Success {
			n.t.Fatalf("ack %s: %+v", status, r)
		}
	}
}

type overview struct {
	Bridge          string  `json:"bridge"`
	Time            string  `json:"time"`
	Maintenance     bool    `json:"maintenance"`
	PopMaintenance  bool    `json:"popMaintenance"`
	BundlesInFlight int     `json:"bundlesInFlight"`
	InFlightLimit   int     `json:"inFlightLimit"`
	FlushMs         float64 `json:"flushMs"`
	Spool           struct {
		Records int64 `json:"records"`
		Bytes   int64 `json:"bytes"`
		Healthy bool  `json:"healthy"`
	} `json:"spool"`
	Totals struct {
		Pushed, Consumed, Commits, Segments uint64
	} `json:"totals"`
	History []struct {
		Time              string  `json:"time"`
		PushedPerSecond   float64 `json:"pushedPerSecond"`
		ConsumedPerSecond float64 `json:"consumedPerSecond"`
		SegmentsPerCommit float64 `json:"segmentsPerCommit"`
	} `json:"history"`
	Buckets int `json:"buckets"`
	Bridges []struct {
		ID      string `json:"id"`
		Self    bool   `json:"self"`
		Buckets int    `json:"buckets"`
	} `json:"bridges"`
}

// The overview counts this bridge's pushes and pops, its history gains an
// interval with both rates once a sample follows them, and a single
// bridge owns every bucket. Its figures are the bridge's: another tenant
// reads the same numbers and no name of the first tenant's queues.
func TestBridgeOverview(t *testing.T) {
	n := consoleNode(t, nodeOpts{})
	n.pushAs("tok-a", [4]string{"ov-secret-queue", "p", "a1", `{"n":1}`}, [4]string{"ov-secret-queue", "p", "a2", `{"n":2}`},
		[4]string{"ov-secret-queue", "q", "a3", `{"n":3}`})
	if p := n.popAs("tok-a", "ov-secret-queue", "p", "batch", "10"); len(p.Messages) != 2 {
		t.Fatalf("popped %+v", p)
	}
	n.br.ConsoleSample()

	var o overview
	n.callJSON(http.MethodGet, "/api/v1/bridge/overview", nil, &o, bearer("tok-a")...)
	if o.Bridge != n.br.ID() || o.Time == "" || o.Maintenance || o.PopMaintenance || !o.Spool.Healthy || o.InFlightLimit < 1 {
		t.Fatalf("overview: %+v", o)
	}
	if o.Totals.Pushed != 3 || o.Totals.Consumed != 2 || o.Totals.Commits < 1 || o.Totals.Segments < 2 {
		t.Fatalf("totals: %+v", o.Totals)
	}
	var pushed, consumed bool
	for _, h := range o.History {
		pushed = pushed || h.PushedPerSecond > 0
		consumed = consumed || h.ConsumedPerSecond > 0
		if h.PushedPerSecond > 0 && h.SegmentsPerCommit <= 0 {
			t.Errorf("an interval with pushes and no segments per commit: %+v", h)
		}
	}
	if !pushed || !consumed {
		t.Fatalf("history without the pushes or the pops: %+v", o.History)
	}
	if o.Buckets != 1024 || len(o.Bridges) != 1 || o.Bridges[0].ID != n.br.ID() || !o.Bridges[0].Self || o.Bridges[0].Buckets != 1024 {
		t.Fatalf("bridges: %d %+v", o.Buckets, o.Bridges)
	}

	status, out := n.as("tok-b", http.MethodGet, "/api/v1/bridge/overview", nil)
	var ob overview
	if status != http.StatusOK || json.Unmarshal(out, &ob) != nil || ob.Totals != o.Totals || strings.Contains(string(out), "ov-secret-queue") {
		t.Fatalf("the other tenant's overview: %d %s", status, out)
	}
	if status, _ := n.get("/api/v1/bridge/overview"); status != http.StatusUnauthorized {
		t.Fatalf("without a token: %d", status)
	}
}

type queueConsumers struct {
	Queue      string `json:"queue"`
	Partitions []struct {
		ID         string  `json:"id"`
		Name       string  `json:"name"`
		LastOffset int64   `json:"lastOffset"`
		LastWrite  *string `json:"lastWrite"`
		Messages   int64   `json:"messages"`
	} `json:"partitions"`
	Groups []struct {
		Name       string `json:"name"`
		Partitions []struct {
			Partition      string  `json:"partition"`
			PartitionID    string  `json:"partitionId"`
			Cursor         int64   `json:"cursor"`
			Lag            int64   `json:"lag"`
			Popped         bool    `json:"popped"`
			LeaseID        *string `json:"leaseId"`
			LeaseExpiresAt *string `json:"leaseExpiresAt"`
			BatchSize      int64   `json:"batchSize"`
		} `json:"partitions"`
	} `json:"groups"`
}

// A queue's partitions by name with their marks and counts, its groups by
// name with their cursors, lags and live leases on every partition (one a
// group never popped counts from the beginning for these groups); another
// tenant's queue of that name is not found.
func TestQueueConsumers(t *testing.T) {
	n := consoleNode(t, nodeOpts{})
	n.pushAs("tok-a", [4]string{"cq", "b", "b1", `1`}, [4]string{"cq", "b", "b2", `2`}, [4]string{"cq", "a", "a1", `3`},
		[4]string{"cq", "a", "a2", `4`}, [4]string{"cq", "a", "a3", `5`})
	n.pushAs("tok-b", [4]string{"cq", "z", "z1", `1`}) // tenant B's queue of the same name
	held := n.popAs("tok-a", "cq", "a", "consumerGroup", "g2", "batch", "2")
	if len(held.Messages) != 2 {
		t.Fatalf("g2 popped %+v", held)
	}
	done := n.popAs("tok-a", "cq", "b", "consumerGroup", "g1", "batch", "10")
	n.ackAs("tok-a", done, "g1", "completed")
	n.popAs("tok-a", "cq", "b", "batch", "1", "autoAck", "true") // queue mode

	var got queueConsumers
	n.callJSON(http.MethodGet, "/api/v1/resources/queues/cq/consumers", nil, &got, bearer("tok-a")...)
	if got.Queue != "cq" || len(got.Partitions) != 2 {
		t.Fatalf("consumers: %+v", got)
	}
	a, b := got.Partitions[0], got.Partitions[1]
	if a.Name != "a" || a.LastOffset != 3 || a.Messages != 3 || a.LastWrite == nil || b.Name != "b" || b.LastOffset != 2 || b.Messages != 2 {
		t.Fatalf("partitions: %+v", got.Partitions)
	}
	if a.ID != held.Messages[0].PartitionID || b.ID != done.Messages[0].PartitionID {
		t.Fatalf("partition ids %s %s, pops said %s %s", a.ID, b.ID, held.Messages[0].PartitionID, done.Messages[0].PartitionID)
	}
	var names []string
	for _, g := range got.Groups {
		names = append(names, g.Name)
	}
	if fmt.Sprint(names) != "[__QUEUE_MODE__ g1 g2]" {
		t.Fatalf("groups %v", names)
	}
	qm, g1, g2 := got.Groups[0].Partitions, got.Groups[1].Partitions, got.Groups[2].Partitions
	if len(qm) != 2 || qm[0].Partition != "a" || qm[0].Popped || qm[0].Lag != 3 ||
		qm[1].Partition != "b" || !qm[1].Popped || qm[1].Cursor != 1 || qm[1].Lag != 1 || qm[1].LeaseID != nil {
		t.Fatalf("queue mode: %+v", qm)
	}
	if len(g1) != 2 || g1[0].Partition != "a" || g1[0].Popped || g1[0].Cursor != 0 || g1[0].Lag != 3 || g1[0].LeaseID != nil ||
		g1[1].Partition != "b" || g1[1].PartitionID != b.ID || !g1[1].Popped || g1[1].Cursor != 2 || g1[1].Lag != 0 ||
		g1[1].LeaseID != nil || g1[1].LeaseExpiresAt != nil || g1[1].BatchSize != 0 {
		t.Fatalf("g1: %+v", g1)
	}
	if len(g2) != 2 || g2[0].Partition != "a" || !g2[0].Popped || g2[0].Cursor != 0 || g2[0].Lag != 3 || g2[0].LeaseID == nil ||
		*g2[0].LeaseID != held.LeaseID || g2[0].LeaseExpiresAt == nil || g2[0].BatchSize != 2 ||
		g2[1].Partition != "b" || g2[1].Popped || g2[1].Lag != 2 || g2[1].LeaseID != nil {
		t.Fatalf("g2: %+v (lease %s)", g2, held.LeaseID)
	}

	// Tenant B reads its own queue of that name; a name nobody has is not found.
	var other queueConsumers
	n.callJSON(http.MethodGet, "/api/v1/resources/queues/cq/consumers", nil, &other, bearer("tok-b")...)
	if len(other.Partitions) != 1 || other.Partitions[0].Name != "z" || len(other.Groups) != 0 {
		t.Fatalf("tenant B: %+v", other)
	}
	for _, tok := range []string{"tok-a", "tok-b"} {
		if status, out := n.as(tok, http.MethodGet, "/api/v1/resources/queues/nope/consumers", nil); status != http.StatusNotFound ||
			string(out) != `{"error":"Queue not found"}` {
			t.Fatalf("unknown queue: %d %s", status, out)
		}
	}
}

type requeueAnswer struct {
	Requeued int  `json:"requeued"`
	More     bool `json:"more"`
	Messages []struct {
		TransactionID    string   `json:"transactionId"`
		NewTransactionID string   `json:"newTransactionId"`
		PartitionID      string   `json:"partitionId"`
		Partition        string   `json:"partition"`
		Offset           int64    `json:"offset"`
		ConsumerGroups   []string `json:"consumerGroups"`
		AlreadyRequeued  bool     `json:"alreadyRequeued"`
	} `json:"messages"`
}

func (n *node) dlqTotal(token, queue string) int {
	n.t.Helper()
	var dl struct {
		Pagination struct{ Total int } `json:"pagination"`
	}
	n.callJSON(http.MethodGet, "/api/v1/dlq?queue="+url.QueryEscape(queue), nil, &dl, bearer(token)...)
	return dl.Pagination.Total
}

// A message a group failed into the dead letters is requeued: pushed again
// to its partition, its dead letter removed, and delivered again to the
// group with its payload. Only admin tokens requeue, each in its own
// tenant; a repeat pushes nothing; maintenance mode refuses it.
func TestRequeueDeadLetters(t *testing.T) {
	n := consoleNode(t, nodeOpts{})
	if status, out := n.as("tok-a", http.MethodPost, "/api/v1/configure", []byte(`{"queue":"rq","options":{"retryLimit":0}}`)); status != http.StatusOK {
		t.Fatalf("configure: %d %s", status, out)
	}
	n.pushAs("tok-a", [4]string{"rq", "p", "m1", `{"m":1}`}, [4]string{"rq", "p", "m2", `{"m":2,"s":"two"}`}, [4]string{"rq", "p", "m3", `{"m":3}`})
	p := n.popAs("tok-a", "rq", "p", "consumerGroup", "g", "batch", "10")
	if len(p.Messages) != 3 {
		t.Fatalf("popped %+v", p)
	}
	n.ackAs("tok-a", popped{Messages: p.Messages[:1]}, "g", "completed")
	n.ackAs("tok-a", popped{Messages: p.Messages[1:2]}, "g", "failed")
	n.ackAs("tok-a", popped{Messages: p.Messages[2:]}, "g", "completed")
	if total := n.dlqTotal("tok-a", "rq"); total != 1 {
		t.Fatalf("%d dead letters", total)
	}
	// The group has read everything: its next pop finds nothing, and the
	// marks hold the partition empty for it.
	if again := n.popAs("tok-a", "rq", "", "consumerGroup", "g"); len(again.Messages) != 0 {
		t.Fatalf("popped again %+v", again)
	}
	pid := p.Messages[1].PartitionID
	one := []byte(fmt.Sprintf(`{"queue":"rq","consumerGroup":"g","partitionId":%q,"transactionId":"m2"}`, pid))

	// Refused: a tenant token (admin only); another tenant's admin finds no such queue.
	if status, out := n.as("tok-a", http.MethodPost, "/api/v1/dlq/requeue", one); status != http.StatusForbidden {
		t.Fatalf("tenant token: %d %s", status, out)
	}
	if status, out := n.as("adm-b", http.MethodPost, "/api/v1/dlq/requeue", one); status != http.StatusNotFound {
		t.Fatalf("tenant B's admin: %d %s", status, out)
	}
	if status, out := n.as("adm-b", http.MethodPost, "/api/v1/dlq/requeue", []byte(`{"queue":"rq"}`)); status != http.StatusNotFound {
		t.Fatalf("tenant B's admin, all: %d %s", status, out)
	}
	// Refused as a bad body, naming the field.
	for body, field := range map[string]string{`{"consumerGroup":"g"}`: "queue", `{"queue":"rq","partitionId":"` + pid + `"}`: "transactionId",
		`{"queue":"rq","partitionId":"x","transactionId":"m2"}`: "partitionId", `{"queue":"rq","consumerGroup":""}`: "consumerGroup"} {
		if status, out := n.as("adm-a", http.MethodPost, "/api/v1/dlq/requeue", []byte(body)); status != http.StatusBadRequest || !strings.Contains(string(out), field) {
			t.Fatalf("%s: %d %s", body, status, out)
		}
	}
	// Refused in maintenance mode.
	if status, out := n.as("adm-a", http.MethodPost, "/api/v1/system/maintenance", []byte(`{"enabled":true}`)); status != http.StatusOK {
		t.Fatalf("maintenance on: %d %s", status, out)
	}
	if status, out := n.as("adm-a", http.MethodPost, "/api/v1/dlq/requeue", one); status != http.StatusServiceUnavailable {
		t.Fatalf("in maintenance: %d %s", status, out)
	}
	if status, out := n.as("adm-a", http.MethodPost, "/api/v1/system/maintenance", []byte(`{"enabled":false}`)); status != http.StatusOK {
		t.Fatalf("maintenance off: %d %s", status, out)
	}
	if total := n.dlqTotal("tok-a", "rq"); total != 1 {
		t.Fatalf("%d dead letters after the refusals", total)
	}

	status, out := n.as("adm-a", http.MethodPost, "/api/v1/dlq/requeue", one)
	var rq requeueAnswer
	if status != http.StatusOK || json.Unmarshal(out, &rq) != nil || rq.Requeued != 1 || rq.More || len(rq.Messages) != 1 {
		t.Fatalf("requeue: %d %s", status, out)
	}
	m := rq.Messages[0]
	if m.TransactionID != "m2" || m.NewTransactionID == "" || m.NewTransactionID == "m2" || m.Partition != "p" || m.PartitionID != pid ||
		m.Offset != 4 || fmt.Sprint(m.ConsumerGroups) != "[g]" || m.AlreadyRequeued {
		t.Fatalf("requeued %+v", m)
	}
	if total := n.dlqTotal("tok-a", "rq"); total != 0 {
		t.Fatalf("%d dead letters after the requeue", total)
	}
	// Announced like a push: the group's next pop, of any partition, finds
	// it although its last pop found the partition empty.
	back := n.popAs("tok-a", "rq", "", "consumerGroup", "g")
	if len(back.Messages) != 1 || back.Messages[0].TransactionID != m.NewTransactionID || string(back.Messages[0].Data) != `{"m":2,"s":"two"}` {
		t.Fatalf("popped after the requeue: %+v", back)
	}
	// A repeat finds no dead letter and pushes nothing.
	if status, out := n.as("adm-a", http.MethodPost, "/api/v1/dlq/requeue", one); status != http.StatusNotFound {
		t.Fatalf("repeat: %d %s", status, out)
	}
	if status, out := n.as("adm-a", http.MethodPost, "/api/v1/dlq/requeue", []byte(`{"queue":"rq"}`)); status != http.StatusOK ||
		string(out) != `{"requeued":0,"more":false,"messages":[]}` {
		t.Fatalf("repeat of all: %d %s", status, out)
	}
	if last := n.count(`SELECT last_offset FROM queen.log_partitions WHERE id = $1`, mustInt(t, pid)); last != 4 {
		t.Fatalf("last offset %d after the repeats, want 4", last)
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A dead letter of an encrypted queue is pushed again sealed, as a push
// is, and delivered as it was sent.
func TestRequeueEncrypted(t *testing.T) {
	n := newNode(t, nodeOpts{keys: testKeys})
	n.configureQueue("sealed", `{"encryptionEnabled":true,"retryLimit":0}`)
	plain := `{"card":"REQUEUE-PLAINTEXT-MARKER"}`
	n.pushHTTP(items(`{"queue":"sealed","partition":"p","transactionId":"s1","payload":` + plain + `}`))
	_, p := n.popHTTP("sealed", "p", "consumerGroup", "g")
	n.ackAll(p, "g", func(string) string { return "failed" })

	status, out := n.post("/api/v1/dlq/requeue", []byte(`{"queue":"sealed"}`))
	var rq requeueAnswer
	if status != http.StatusOK || json.Unmarshal(out, &rq) != nil || rq.Requeued != 1 || rq.Messages[0].Offset != 2 {
		t.Fatalf("requeue: %d %s", status, out)
	}
	f := storedFrame(t, n, "sealed", "p", 2)
	if f.Flags&segment.FlagEncrypted == 0 || strings.Contains(string(f.Payload), "PLAINTEXT-MARKER") || f.TransactionID != rq.Messages[0].NewTransactionID {
		t.Fatalf("stored requeue: flags %b, payload %q, txid %q", f.Flags, f.Payload, f.TransactionID)
	}
	_, back := n.popHTTP("sealed", "p", "consumerGroup", "g")
	if len(back.Messages) != 1 || string(back.Messages[0].Data) != plain {
		t.Fatalf("popped %+v", back)
	}
}
