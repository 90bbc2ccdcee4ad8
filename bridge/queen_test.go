package bridge_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// queenResult is a push result as Queen's clients read it.
type queenResult struct {
	Index         int     `json:"index"`
	Status        string  `json:"status"`
	MessageID     string  `json:"message_id"`
	TransactionID string  `json:"transaction_id"`
	TraceID       *string `json:"trace_id"`
	QueueName     string  `json:"queueName"`
	PartitionID   string  `json:"partition_id"`
	// and ours, which must agree
	OurMessageID string `json:"messageId"`
	OurTxID      string `json:"transactionId"`
	Partition    string `json:"partition"`
}

// Queen's clients create a queue with their whole option set, then push
// and read message_id of queued and duplicate items, send "" for "no
// transactionId" and "no partition", and read options back.
func TestQueenClientsFlow(t *testing.T) {
	n := newNode(t, nodeOpts{})
	create := `{"queue":"orders.eu","namespace":"orders","task":"eu","options":{"leaseTime":300,"retryLimit":3,"priority":5,
		"delayedProcessing":0,"windowBuffer":0,"maxSize":10000,"completedRetentionSeconds":3600,"dedupWindowSeconds":120,"encryptionEnabled":false}}`
	status, out := n.post("/api/v1/configure", []byte(create))
	var ans struct {
		Configured bool                       `json:"configured"`
		Queue      string                     `json:"queue"`
		Namespace  string                     `json:"namespace"`
		Options    map[string]json.RawMessage `json:"options"`
		NotActedOn []string                   `json:"notActedOn"`
	}
	if status != http.StatusOK || json.Unmarshal(out, &ans) != nil || !ans.Configured || ans.Namespace != "orders" {
		t.Fatalf("create: %d %s", status, out)
	}
	if string(ans.Options["leaseTime"]) != "300" || string(ans.Options["dedupWindowSeconds"]) != "120" ||
		strings.Join(ans.NotActedOn, ",") != "completedRetentionSeconds,maxSize,priority" {
		t.Fatalf("create answered options %s, not acted on %v", out, ans.NotActedOn)
	}
	// Read back: a configure that changes one option keeps the others.
	status, out = n.post("/api/v1/configure", []byte(`{"queue":"orders.eu","options":{"priority":9}}`))
	if status != http.StatusOK || json.Unmarshal(out, &ans) != nil || string(ans.Options["priority"]) != "9" ||
		string(ans.Options["leaseTime"]) != "300" || string(ans.Options["dedupWindowSeconds"]) != "120" {
		t.Fatalf("read back: %d %s", status, out)
	}

	body := `{"items":[{"queue":"orders.eu","partition":"","transactionId":"","traceId":"","payload":{"a":1}},
		{"queue":"orders.eu","partition":"c-1","transactionId":"t-1","traceId":"tr-1","payload":2},
		{"queue":"orders.eu","partition":"c-1","transactionId":"t-1","payload":3}]}`
	status, out = n.post("/api/v1/push", []byte(body))
	var rs []queenResult
	if status != http.StatusCreated || json.Unmarshal(out, &rs) != nil || len(rs) != 3 {
		t.Fatalf("push: %d %s", status, out)
	}
	if r := rs[0]; r.Status != "queued" || r.Partition != "Default" || r.MessageID == "" || r.MessageID != r.OurMessageID ||
		r.TransactionID != r.MessageID || r.TraceID != nil || r.QueueName != "orders.eu" {
		t.Fatalf("empty transactionId and partition: %+v", r)
	}
	pid := n.count(`SELECT p.id FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'orders.eu' AND p.name = 'c-1'`)
	if r := rs[1]; r.Status != "queued" || r.TransactionID != "t-1" || r.OurTxID != "t-1" || r.TraceID == nil || *r.TraceID != "tr-1" ||
		r.PartitionID != strconv.FormatInt(pid, 10) {
		t.Fatalf("queued: %+v (partition id %d)", r, pid)
	}
	if r := rs[2]; r.Status != "duplicate" || r.MessageID != rs[1].MessageID || r.PartitionID != "" {
		t.Fatalf("duplicate: %+v", r)
	}
	// The same answer over NATS.
	msg := n.natsPush([]byte(`{"items":[{"queue":"orders.eu","partition":"c-1","transactionId":"t-1","payload":4}]}`), "")
	if json.Unmarshal(msg.Data, &rs) != nil || rs[0].Status != "duplicate" || rs[0].MessageID != rs[0].OurMessageID || rs[0].MessageID == "" {
		t.Fatalf("NATS: %s", msg.Data)
	}
}

// A namespace or task that is not the queue name's is refused, not
// replaced.
func TestConfigureRefusesAnotherNamespace(t *testing.T) {
	n := newNode(t, nodeOpts{})
	for _, body := range []string{`{"queue":"orders.eu","namespace":"billing"}`, `{"queue":"orders.eu","task":"us"}`} {
		status, out := n.post("/api/v1/configure", []byte(body))
		if status != http.StatusBadRequest || !strings.Contains(string(out), "does not match queue") {
			t.Fatalf("%s: %d %s", body, status, out)
		}
	}
	if status, out := n.post("/api/v1/configure", []byte(`{"queue":"orders.eu","options":{"dedupWindowSeconds":"x"}}`)); status != http.StatusBadRequest || !strings.Contains(string(out), "options.dedupWindowSeconds") {
		t.Fatalf("a bad option: %d %s", status, out)
	}
	if c := n.count(`SELECT count(*) FROM queen.queues`); c != 0 {
		t.Fatalf("%d queues made by refused configures", c)
	}
}

// Unknown routes answer JSON 404; a transaction without operations is a
// 400 with Queen's message; an ack without its fields is a 400; maintenance carries Queen's fields.
func TestRoutesQueenClientsMayCall(t *testing.T) {
	n := newNode(t, nodeOpts{})
	for _, c := range []struct {
		method, path string
		status       int
		want         string
	}{
		{"GET", "/api/v1/nothing", http.StatusNotFound, "no route GET /api/v1/nothing"},
		{"POST", "/api/v1/ack", http.StatusBadRequest, "transactionId is required"},
		{"POST", "/api/v1/ack/batch", http.StatusBadRequest, "acknowledgments must be an array"},
		{"POST", "/api/v1/transaction", http.StatusBadRequest, "operations array required"},
		{"GET", "/api/v1/system/maintenance", http.StatusOK, `"bufferHealthy":true`},
	} {
		var status int
		var out []byte
		if c.method == "GET" {
			status, out = n.get(c.path)
		} else {
			status, out = n.post(c.path, []byte(`{}`))
		}
		var e map[string]any
		if status != c.status || !strings.Contains(string(out), c.want) || json.Unmarshal(out, &e) != nil {
			t.Errorf("%s %s: %d %s", c.method, c.path, status, out)
		}
	}
	_, out := n.get("/api/v1/system/maintenance")
	if !strings.Contains(string(out), `"message":"maintenance mode is off`) {
		t.Fatalf("maintenance: %s", out)
	}
}
