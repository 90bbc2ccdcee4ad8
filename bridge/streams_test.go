package bridge_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// streamsAnswer is an answer of the streams routes as Queen's SDK reads it.
type streamsAnswer struct {
	Success  bool   `json:"success"`
	QueryID  string `json:"query_id"`
	Fresh    bool   `json:"fresh"`
	Reset    bool   `json:"reset"`
	Error    string `json:"error"`
	StateOps int    `json:"state_ops_applied"`
	Rows     []struct {
		Key   string          `json:"key"`
		Value json.RawMessage `json:"value"`
	} `json:"rows"`
	PushResults []struct {
		Status string `json:"status"`
		Queue  string `json:"queue"`
	} `json:"push_results"`
	AckResult *struct {
		Success       bool `json:"success"`
		Count         int  `json:"count"`
		LeaseReleased bool `json:"lease_released"`
	} `json:"ack_result"`
}

func (n *node) streams(path, body string, header ...string) (int, streamsAnswer) {
	n.t.Helper()
	status, out := n.post("/streams/v1/"+path, []byte(body), header...)
	var a streamsAnswer
	if err := json.Unmarshal(out, &a); err != nil {
		n.t.Fatalf("%s answer %s: %v", path, out, err)
	}
	if status != http.StatusOK && a.Error == "" {
		n.t.Fatalf("%s: %d without an error: %s", path, status, out)
	}
	return status, a
}

// The three routes answer as Queen's server does: registration 200 (fresh,
// then not), 409 on another config_hash, 400 naming a missing field; a
// cycle commits its state, sink push and acknowledgement; state/get reads
// them back; a cycle of an unknown message is 200 with success false and
// writes nothing.
func TestStreamsRoutes(t *testing.T) {
	n := newNode(t, nodeOpts{})
	n.pushHTTP(items(item("ssrc", "p", "a1"), item("ssrc", "p", "a2")))
	reg := `{"name":"totals","source_queue":"ssrc","sink_queue":"ssink","config_hash":"h1"}`
	if status, a := n.streams("queries", reg); status != http.StatusOK || !a.Success || !a.Fresh || a.QueryID == "" {
		t.Fatalf("register: %d %+v", status, a)
	}
	status, a := n.streams("queries", reg)
	if status != http.StatusOK || a.Fresh {
		t.Fatalf("register again: %d %+v", status, a)
	}
	q := a.QueryID
	if status, a := n.streams("queries", strings.Replace(reg, "h1", "h2", 1)); status != http.StatusConflict || a.Success || !strings.Contains(a.Error, "config_hash mismatch") {
		t.Fatalf("another hash: %d %+v", status, a)
	}
	if status, a := n.streams("queries", `{"name":"x","config_hash":"h"}`); status != http.StatusBadRequest || !strings.Contains(a.Error, "source_queue") {
		t.Fatalf("no source: %d %+v", status, a)
	}
	if status, a := n.streams("cycle", `{"query_id":"`+q+`"}`); status != http.StatusBadRequest || !strings.Contains(a.Error, "partition_id") {
		t.Fatalf("no partition: %d %+v", status, a)
	}
	_, p := n.popHTTP("ssrc", "", "consumerGroup", "g", "batch", "10")
	if len(p.Messages) != 2 {
		t.Fatalf("pop: %+v", p)
	}
	head := `{"query_id":"` + q + `","partition_id":"` + p.PartitionID + `","consumer_group":"g",`
	status, a = n.streams("cycle", head+`"state_ops":[{"type":"upsert","key":"w\u001f1","value":{"acc":3,"windowEnd":1000}}],
		"push_items":[{"queue":"ssink","partition":"p","payload":{"sum":3}}],
		"ack":{"transactionId":"no-such","leaseId":"`+p.LeaseID+`","status":"completed","count":2}}`)
	if status != http.StatusOK || a.Success || !strings.Contains(a.Error, "Message not found") {
		t.Fatalf("unknown message: %d %+v", status, a)
	}
	if c := n.count(`SELECT count(*) FROM queen.stream_state`) + n.count(`SELECT count(*) FROM queen.queues WHERE name = 'ssink'`); c != 0 {
		t.Fatalf("a refused cycle wrote %d rows", c)
	}
	status, a = n.streams("cycle", head+`"state_ops":[{"type":"upsert","key":"w\u001f1","value":{"acc":3,"windowEnd":1000}}],
		"push_items":[{"queue":"ssink","partition":"p","payload":{"sum":3}}],
		"ack":{"transactionId":"a2","leaseId":"`+p.LeaseID+`","status":"completed","count":2}}`)
	if status != http.StatusOK || !a.Success || a.StateOps != 1 || len(a.PushResults) != 1 || a.PushResults[0].Status != "queued" ||
		a.AckResult == nil || a.AckResult.Count != 2 || !a.AckResult.LeaseReleased {
		t.Fatalf("cycle: %d %+v", status, a)
	}
	// The sink push was announced before the answer: a pop finds it.
	if _, s := n.popHTTP("ssink", "p"); len(s.Messages) != 1 || string(s.Messages[0].Data) != `{"sum":3}` {
		t.Fatalf("sink: %+v", s)
	}
	if _, more := n.popHTTP("ssrc", "", "consumerGroup", "g", "batch", "10"); len(more.Messages) != 0 {
		t.Fatalf("the source after the cycle: %+v", more)
	}
	for body, want := range map[string]int{`"keys":[]}`: 1, `"key_prefix":"w\u001f","ripe_at_or_before":999}`: 0, `"ripe_at_or_before":1000}`: 1} {
		status, a := n.streams("state/get", `{"query_id":"`+q+`","partition_id":"`+p.PartitionID+`",`+body)
		if status != http.StatusOK || len(a.Rows) != want {
			t.Fatalf("state/get %s: %d %+v", body, status, a)
		}
	}
}

// A tenant cannot read or write another tenant's query state: a state read
// of its query is 404, a cycle is refused whole, and registering the same
// name makes a query of its own.
func TestStreamsTenancy(t *testing.T) {
	a, b := tenancy.TenantID(uuid.New()), tenancy.TenantID(uuid.New())
	n := newNode(t, nodeOpts{tokens: map[string]tenancy.TenantID{"tok-a": a, "tok-b": b}})
	as := func(tok string) []string { return []string{"Authorization", "Bearer " + tok} }
	if status, out := n.post("/api/v1/push", []byte(items(item("tsrc", "p", "m1"))), as("tok-a")...); status != http.StatusCreated {
		t.Fatalf("push: %d %s", status, out)
	}
	reg := `{"name":"totals","source_queue":"tsrc","config_hash":"h"}`
	_, ra := n.streams("queries", reg, as("tok-a")...)
	pid := n.count(`SELECT p.id FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'tsrc'`)
	target := `{"query_id":"` + ra.QueryID + `","partition_id":` + jsonInt(pid) + `,`
	if status, c := n.streams("cycle", target+`"state_ops":[{"type":"upsert","key":"k","value":1}]}`, as("tok-a")...); status != http.StatusOK || !c.Success {
		t.Fatalf("a's cycle: %d %+v", status, c)
	}
	if status, s := n.streams("state/get", target+`"keys":[]}`, as("tok-b")...); status != http.StatusNotFound || len(s.Rows) != 0 {
		t.Fatalf("b reads a's state: %d %+v", status, s)
	}
	if status, c := n.streams("cycle", target+`"state_ops":[{"type":"upsert","key":"k","value":2},{"type":"delete","key":"k"}]}`, as("tok-b")...); status != http.StatusOK || c.Success {
		t.Fatalf("b writes a's state: %d %+v", status, c)
	}
	if status, s := n.streams("state/get", target+`"keys":["k"]}`, as("tok-a")...); status != http.StatusOK || len(s.Rows) != 1 || string(s.Rows[0].Value) != "1" {
		t.Fatalf("a's state after b: %d %+v", status, s)
	}
	if _, rb := n.streams("queries", reg, as("tok-b")...); !rb.Fresh || rb.QueryID == ra.QueryID {
		t.Fatalf("b's registration of the same name: %+v (a's %s)", rb, ra.QueryID)
	}
}

func jsonInt(v int64) string { out, _ := json.Marshal(v); return string(out) }
