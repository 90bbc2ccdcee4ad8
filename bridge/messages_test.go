package bridge_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// Queen's message routes (docs/admin-messages.md) over HTTP, as Queen's admin clients
// call them: the list form of GET /api/v1/messages, a message's detail,
// and its delete, a tombstone that every read path skips from then on.

type messageDetail struct {
	ID             string          `json:"id"`
	TransactionID  string          `json:"transactionId"`
	PartitionID    string          `json:"partitionId"`
	QueuePath      string          `json:"queuePath"`
	Queue          string          `json:"queue"`
	Partition      string          `json:"partition"`
	Namespace      string          `json:"namespace"`
	Task           string          `json:"task"`
	Status         string          `json:"status"`
	Payload        json.RawMessage `json:"payload"`
	IsEncrypted    bool            `json:"isEncrypted"`
	TraceID        *string         `json:"traceId"`
	CreatedAt      string          `json:"createdAt"`
	ErrorMessage   *string         `json:"errorMessage"`
	RetryCount     *int            `json:"retryCount"`
	LeaseExpiresAt *string         `json:"leaseExpiresAt"`
	QueueConfig    map[string]any  `json:"queueConfig"`
	Mode           struct {
		HasQueueMode     bool   `json:"hasQueueMode"`
		BusGroupsCount   int    `json:"busGroupsCount"`
		ConsumedByGroups int    `json:"consumedByGroups"`
		Type             string `json:"type"`
	} `json:"mode"`
	ConsumerGroups []struct {
		Name           string  `json:"name"`
		Consumed       bool    `json:"consumed"`
		LeaseExpiresAt *string `json:"leaseExpiresAt"`
	} `json:"consumerGroups"`
}

type messageList struct {
	Messages []struct {
		ID            string `json:"id"`
		TransactionID string `json:"transactionId"`
		PartitionID   string `json:"partitionId"`
		QueuePath     string `json:"queuePath"`
		Status        string `json:"status"`
		QueueStatus   string `json:"queueStatus"`
		BusStatus     struct {
			ConsumedBy  int `json:"consumedBy"`
			TotalGroups int `json:"totalGroups"`
		} `json:"busStatus"`
		TraceID        *string `json:"traceId"`
		CreatedAt      string  `json:"createdAt"`
		LeaseExpiresAt *string `json:"leaseExpiresAt"`
	} `json:"messages"`
	Mode struct {
		HasQueueMode   bool   `json:"hasQueueMode"`
		BusGroupsCount int    `json:"busGroupsCount"`
		Type           string `json:"type"`
	} `json:"mode"`
}

// txids is the list's transactionIds, in its order.
func (l messageList) txids() string {
	var out []string
	for _, m := range l.Messages {
		out = append(out, m.TransactionID)
	}
	return strings.Join(out, " ")
}

type deleted struct {
	Success       bool   `json:"success"`
	PartitionID   string `json:"partitionId"`
	TransactionID string `json:"transactionId"`
	Message       string `json:"message"`
}

func messagePath(pid, txid string) string {
	return "/api/v1/messages/" + url.PathEscape(pid) + "/" + url.PathEscape(txid)
}

// detail reads a message's detail: nil on 404.
func (n *node) detail(pid, txid string, header ...string) *messageDetail {
	n.t.Helper()
	status, out := n.call("GET", messagePath(pid, txid), nil, header...)
	if status == http.StatusNotFound {
		if string(out) != `{"error":"Message not found"}` {
			n.t.Fatalf("detail 404 body: %s", out)
		}
		return nil
	}
	var d messageDetail
	if status != http.StatusOK || json.Unmarshal(out, &d) != nil {
		n.t.Fatalf("detail %s/%s: %d %s", pid, txid, status, out)
	}
	return &d
}

func (n *node) deleteMessage(pid, txid string, header ...string) deleted {
	n.t.Helper()
	status, out := n.call("DELETE", messagePath(pid, txid), nil, header...)
	var d deleted
	if status != http.StatusOK || json.Unmarshal(out, &d) != nil {
		n.t.Fatalf("delete %s/%s: %d %s", pid, txid, status, out)
	}
	if d.PartitionID != pid || d.TransactionID != txid {
		n.t.Fatalf("delete %s/%s answered for %s/%s", pid, txid, d.PartitionID, d.TransactionID)
	}
	want := "Message not found"
	if d.Success {
		want = "Message deleted successfully"
	}
	if d.Message != want {
		n.t.Fatalf("delete answered %+v", d)
	}
	return d
}

func (n *node) listMessages(query string, header ...string) messageList {
	n.t.Helper()
	status, out := n.get("/api/v1/messages?"+query, header...)
	var l messageList
	if status != http.StatusOK || json.Unmarshal(out, &l) != nil || !strings.Contains(string(out), `"mode":`) {
		n.t.Fatalf("list %s: %d %s", query, status, out)
	}
	return l
}

// readBack is section 8's read of a partition: its transactionIds in
// offset order.
func (n *node) readBack(queue, partition string) string {
	n.t.Helper()
	status, out := n.get("/api/v1/messages?queue=" + url.QueryEscape(queue) + "&partition=" + url.QueryEscape(partition))
	var r struct {
		Messages []struct {
			Offset        int64  `json:"offset"`
			TransactionID string `json:"transactionId"`
		} `json:"messages"`
		Next *int64 `json:"next"`
	}
	if status != http.StatusOK || json.Unmarshal(out, &r) != nil || r.Next == nil {
		n.t.Fatalf("read back %s/%s: %d %s", queue, partition, status, out)
	}
	var got []string
	for _, m := range r.Messages {
		got = append(got, fmt.Sprintf("%s@%d", m.TransactionID, m.Offset))
	}
	return strings.Join(got, " ")
}

func poppedTxids(p popped) string {
	var out []string
	for _, m := range p.Messages {
		out = append(out, m.TransactionID)
	}
	return strings.Join(out, " ")
}

func pushTx(queue, partition string, txids ...string) string {
	var its []string
	for _, tx := range txids {
		its = append(its, item(queue, partition, tx))
	}
	return items(its...)
}

// The detail: found by partitionId and transactionId, the payload as
// pushed (decrypted for an encrypted queue), the status as the groups'
// cursors say; 404 for what is not there. The list form: newest first, by
// status, by namespace, paged, next to section 8's offset read on the
// same path.
func TestMessageDetailAndList(t *testing.T) {
	n := newNode(t, nodeOpts{keys: testKeys})
	n.configureQueue("msg.enc", `{"encryptionEnabled":true,"leaseTime":60}`)
	secret := `{"card":"4111 1111 1111 1111","n":[1,2.50]}`
	enc := n.pushHTTP(items(`{"queue":"msg.enc","partition":"p1","transactionId":"e1","traceId":"tr-1","payload":` + secret + `}`))
	encPID := decodePartitionID(t, n, "msg.enc", "p1")
	d := n.detail(encPID, "e1")
	if d == nil || string(d.Payload) != secret || !d.IsEncrypted || d.ID != enc[0].MessageID || d.Queue != "msg.enc" ||
		d.Partition != "p1" || d.QueuePath != "msg.enc/p1" || d.Namespace != "msg" || d.Task != "enc" || d.TraceID == nil || *d.TraceID != "tr-1" ||
		d.Status != "pending" || d.Mode.Type != "none" || d.ErrorMessage != nil || d.RetryCount != nil || len(d.ConsumerGroups) != 0 {
		t.Fatalf("detail of an encrypted message: %+v", d)
	}
	if d.QueueConfig["leaseTime"] != 60.0 || d.QueueConfig["retryLimit"] != 3.0 || d.QueueConfig["priority"] != 0.0 {
		t.Fatalf("queueConfig: %v", d.QueueConfig)
	}
	for _, c := range [][2]string{{encPID, "nope"}, {"abc", "e1"}, {"0", "e1"}, {"999999999", "e1"}, {"-1", "e1"}} {
		if d := n.detail(c[0], c[1]); d != nil {
			t.Fatalf("detail of %s/%s: %+v", c[0], c[1], d)
		}
	}

	n.pushHTTP(pushTx("msg.plain", "", "a1", "a2"))
	n.pushHTTP(pushTx("msg.plain", "", "a3"))
	pid := decodePartitionID(t, n, "msg.plain", "Default")
	// Section 8's offset read is still what a query of queue (and
	// partition, from, limit) asks for.
	if got := n.readBack("msg.plain", "Default"); got != "a1@1 a2@2 a3@3" {
		t.Fatalf("offset read: %s", got)
	}
	if status, out := n.get("/api/v1/messages?queue=msg.plain&from=2&limit=1"); status != http.StatusOK || !strings.Contains(string(out), `"next":3`) {
		t.Fatalf("offset read from 2: %d %s", status, out)
	}
	if l := n.listMessages("ns=msg"); l.txids() != "a3 a2 a1 e1" && l.txids() != "a3 a1 a2 e1" {
		t.Fatalf("list by namespace, newest first: %s", l.txids())
	}
	if l := n.listMessages("queue=msg.plain&offset=1&limit=1"); len(l.Messages) != 1 || (l.Messages[0].TransactionID != "a2" && l.Messages[0].TransactionID != "a1") {
		t.Fatalf("list, second page of one: %s", l.txids())
	}
	if l := n.listMessages("task=enc"); l.txids() != "e1" || l.Messages[0].PartitionID != encPID || l.Messages[0].QueuePath != "msg.enc/p1" {
		t.Fatalf("list by task: %+v", l)
	}
	future := url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339))
	if l := n.listMessages("ns=msg&from=" + future); len(l.Messages) != 0 {
		t.Fatalf("list from an hour ahead: %s", l.txids())
	}
	for _, bad := range []string{"status=done", "ns=msg&from=yesterday", "ns=msg&limit=0", "ns=msg&offset=x"} {
		if status, out := n.get("/api/v1/messages?" + bad); status != http.StatusBadRequest {
			t.Fatalf("list %s: %d %s", bad, status, out)
		}
	}

	// Queue mode takes a1 under a lease: processing; a2, a3 pending.
	_, p := n.popHTTP("msg.plain", "", "batch", "1")
	if poppedTxids(p) != "a1" {
		t.Fatalf("pop: %s", poppedTxids(p))
	}
	if d := n.detail(pid, "a1"); d.Status != "processing" || d.LeaseExpiresAt == nil || !d.Mode.HasQueueMode || d.Mode.Type != "queue" ||
		len(d.ConsumerGroups) != 1 || d.ConsumerGroups[0].Name != "__QUEUE_MODE__" || d.ConsumerGroups[0].Consumed {
		t.Fatalf("detail of a1 under a lease: %+v", d)
	}
	if l := n.listMessages("queue=msg.plain&status=processing"); l.txids() != "a1" || l.Messages[0].LeaseExpiresAt == nil || !l.Mode.HasQueueMode {
		t.Fatalf("processing: %+v", l)
	}
	if l := n.listMessages("queue=msg.plain&status=pending"); l.txids() != "a3 a2" {
		t.Fatalf("pending: %s", l.txids())
	}
	n.ackAll(p, "__QUEUE_MODE__", nil)
	if d := n.detail(pid, "a1"); d.Status != "completed" || !d.ConsumerGroups[0].Consumed {
		t.Fatalf("detail of a1 acknowledged: %+v", d)
	}
	if l := n.listMessages("queue=msg.plain&status=completed"); l.txids() != "a1" || l.Messages[0].QueueStatus != "completed" {
		t.Fatalf("completed: %+v", l)
	}

	// A named group on the encrypted queue: completed once it passed the
	// message (a bus: every named group).
	_, p = n.popHTTP("msg.enc", "", "consumerGroup", "bus1")
	n.ackAll(p, "bus1", nil)
	if d := n.detail(encPID, "e1"); d.Status != "completed" || d.Mode.Type != "bus" || d.Mode.BusGroupsCount != 1 || d.Mode.ConsumedByGroups != 1 {
		t.Fatalf("detail of e1 consumed by bus1: %+v", d)
	}
	if l := n.listMessages("queue=msg.enc&status=completed"); l.txids() != "e1" || l.Messages[0].BusStatus.ConsumedBy != 1 ||
		l.Messages[0].BusStatus.TotalGroups != 1 || l.Messages[0].QueueStatus != "pending" {
		t.Fatalf("completed on a bus: %+v", l)
	}

	// A dead letter: its error and retry count, and the status.
	n.pushHTTP(pushTx("msg.plain", "", "a4"))
	_, p = n.popHTTP("msg.plain", "", "batch", "10")
	if poppedTxids(p) != "a2 a3 a4" {
		t.Fatalf("pop: %s", poppedTxids(p))
	}
	n.ackAll(p, "__QUEUE_MODE__", func(tx string) string {
		if tx == "a4" {
			return "dlq"
		}
		return "completed"
	})
	if d := n.detail(pid, "a4"); d.Status != "dead_letter" || d.ErrorMessage == nil || d.RetryCount == nil {
		t.Fatalf("detail of a dead letter: %+v", d)
	}
	if l := n.listMessages("ns=msg&status=dead_letter"); l.txids() != "a4" {
		t.Fatalf("dead letters: %s", l.txids())
	}
	if l := n.listMessages("queue=msg.plain&status=completed"); l.txids() != "a3 a2 a1" && l.txids() != "a3 a1 a2" {
		t.Fatalf("completed after the dead letter: %s", l.txids())
	}
}

// decodePartitionID is a partition's id as push results and pops give it.
func decodePartitionID(t *testing.T, n *node, queue, partition string) string {
	t.Helper()
	return fmt.Sprint(n.count(`SELECT p.id FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
		WHERE q.name = $1 AND p.name = $2`, queue, partition))
}

// A delete is a tombstone: answered as Queen answers it, and from its
// commit on the message is found no more and every read skips it — the
// first pop of a group (the general pop), a pop the hot tail would have
// served from memory (its claim refused, the pop reads PostgreSQL by
// partition id), the offset read, the dead-letter list — while the
// offsets around it stay. A pop that skipped it is acknowledged whole.
// Its transactionId stays known: pushed again, it is a duplicate.
func TestMessageDeleteIsATombstone(t *testing.T) {
	n := newNode(t, nodeOpts{})
	// A consumer polls the queue before anything is pushed: from then on the
	// hot tail keeps the queue's commits.
	if status, _ := n.popHTTP("del.q", "p", "consumerGroup", "g2"); status != http.StatusNoContent {
		t.Fatalf("a pop of the queue before it exists: %d", status)
	}
	n.pushHTTP(pushTx("del.q", "p", "m1", "m2", "m3", "m4", "m5", "m6"))
	pid := decodePartitionID(t, n, "del.q", "p")

	// g2 acknowledges m1 first, so that the tail knows its cursor and
	// holds what follows it.
	_, p := n.popHTTP("del.q", "p", "consumerGroup", "g2", "batch", "1")
	if poppedTxids(p) != "m1" {
		t.Fatalf("g2's first pop: %s", poppedTxids(p))
	}
	n.ackAll(p, "g2", nil)
	// g3 takes everything, and sends m4 to its dead letters.
	_, p = n.popHTTP("del.q", "p", "consumerGroup", "g3", "batch", "10")
	n.ackAll(p, "g3", func(tx string) string {
		if tx == "m4" {
			return "dlq"
		}
		return "completed"
	})
	if status, out := n.get("/api/v1/dlq?queue=del.q"); status != http.StatusOK || !strings.Contains(string(out), `"transactionId":"m4"`) {
		t.Fatalf("dead letters before the delete: %d %s", status, out)
	}

	if d := n.deleteMessage(pid, "m3"); !d.Success {
		t.Fatalf("delete m3: %+v", d)
	}
	if d := n.deleteMessage(pid, "m4"); !d.Success {
		t.Fatalf("delete m4: %+v", d)
	}
	for _, c := range [][2]string{{pid, "m3"}, {pid, "nope"}, {"abc", "m5"}, {"999999999", "m5"}} {
		if d := n.deleteMessage(c[0], c[1]); d.Success {
			t.Fatalf("delete %s/%s again or unknown: %+v", c[0], c[1], d)
		}
	}
	for _, tx := range []string{"m3", "m4"} {
		if d := n.detail(pid, tx); d != nil {
			t.Fatalf("detail of deleted %s: %+v", tx, d)
		}
	}
	if d := n.detail(pid, "m5"); d == nil {
		t.Fatal("m5 is not found")
	}

	// The general pop: g1's first.
	_, p = n.popHTTP("del.q", "p", "consumerGroup", "g1", "batch", "10")
	if got := poppedTxids(p); got != "m1 m2 m5 m6" {
		t.Fatalf("g1's first pop: %s", got)
	}
	for i, a := range n.ackAll(p, "g1", nil) {
		if !a.Success || !a.LeaseReleased {
			t.Fatalf("whole-batch ack after a pop that skipped tombstones, item %d: %+v", i, a)
		}
	}
	if status, _ := n.popHTTP("del.q", "p", "consumerGroup", "g1"); status != http.StatusNoContent {
		t.Fatalf("g1 after its ack: %d", status)
	}
	// The hot tail: g2's cursor is known and the tail holds m2..m6, so the
	// pop tries a claim from memory, which the tombstones refuse.
	misses := metricValue(t, n, "queen_tail_misses_total")
	_, p = n.popHTTP("del.q", "p", "consumerGroup", "g2", "batch", "10")
	if got := poppedTxids(p); got != "m2 m5 m6" {
		t.Fatalf("g2's pop: %s", got)
	}
	if m := metricValue(t, n, "queen_tail_misses_total"); m != misses+1 {
		t.Fatalf("tail misses %v -> %v: the pop did not go to the tail first", misses, m)
	}
	n.ackAll(p, "g2", nil)
	// Past the tombstones the tail serves again.
	hits := metricValue(t, n, "queen_tail_hits_total")
	n.pushHTTP(pushTx("del.q", "p", "m7"))
	_, p = n.popHTTP("del.q", "p", "consumerGroup", "g2")
	if poppedTxids(p) != "m7" || metricValue(t, n, "queen_tail_hits_total") != hits+1 {
		t.Fatalf("g2's pop after the tombstones: %s", poppedTxids(p))
	}
	n.ackAll(p, "g2", nil)

	// The offset read, the dead-letter list, the message list.
	if got := n.readBack("del.q", "p"); got != "m1@1 m2@2 m5@5 m6@6 m7@7" {
		t.Fatalf("offset read: %s", got)
	}
	if status, out := n.get("/api/v1/dlq?queue=del.q"); status != http.StatusOK || strings.Contains(string(out), `"m4"`) || !strings.Contains(string(out), `"total":0`) {
		t.Fatalf("dead letters after the delete: %d %s", status, out)
	}
	// Newest first: m7, then m1, m2, m5, m6 in an order their shared
	// creation times may leave open; never the deleted m3 and m4.
	if l := strings.Fields(n.listMessages("ns=del").txids()); len(l) != 5 || l[0] != "m7" ||
		!slices.Equal(slices.Sorted(slices.Values(l[1:])), []string{"m1", "m2", "m5", "m6"}) {
		t.Fatalf("list after the deletes: %s", l)
	}

	// Deduplication still knows m3: not stored again.
	again := n.pushHTTP(pushTx("del.q", "p", "m3"))
	if again[0].Status != "duplicate" || again[0].Offset != 3 {
		t.Fatalf("m3 pushed again: %+v", again[0])
	}
	if got := n.readBack("del.q", "p"); got != "m1@1 m2@2 m5@5 m6@6 m7@7" {
		t.Fatalf("offset read after the repeat: %s", got)
	}
	if last := n.count(`SELECT last_offset FROM queen.log_partitions WHERE id = $1`, pid); last != 7 {
		t.Fatalf("last offset %d after the repeat", last)
	}
	// Nothing was erased: the bytes are in the segment still.
	if c := n.count(`SELECT count(*) FROM queen.log_segments WHERE partition_id = $1 AND base_offset <= 3 AND end_offset >= 3`, pid); c != 1 {
		t.Fatalf("%d segments hold offset 3", c)
	}
}

// Another tenant's message reads as unknown to the detail, the delete and
// the list.
func TestMessageRoutesAreScopedToTheTenant(t *testing.T) {
	n := newNode(t, nodeOpts{tokens: map[string]tenancy.TenantID{"tok-a": tenancy.TenantID(uuid.New()), "tok-b": tenancy.TenantID(uuid.New())}})
	a, b := []string{"Authorization", "Bearer tok-a"}, []string{"Authorization", "Bearer tok-b"}
	if status, out := n.post("/api/v1/push", []byte(pushTx("ten.q", "p", "t1", "t2")), a...); status != http.StatusCreated {
		t.Fatalf("push: %d %s", status, out)
	}
	pid := decodePartitionID(t, n, "ten.q", "p")
	if d := n.detail(pid, "t1", b...); d != nil {
		t.Fatalf("tenant b reads a's message: %+v", d)
	}
	if l := n.listMessages("ns=ten", b...); len(l.Messages) != 0 {
		t.Fatalf("tenant b lists a's messages: %s", l.txids())
	}
	if d := n.deleteMessage(pid, "t1", b...); d.Success {
		t.Fatal("tenant b deleted a's message")
	}
	if d := n.detail(pid, "t1", a...); d == nil || d.TransactionID != "t1" {
		t.Fatalf("tenant a's detail: %+v", d)
	}
	if l := n.listMessages("ns=ten", a...); l.txids() != "t2 t1" && l.txids() != "t1 t2" {
		t.Fatalf("tenant a's list: %s", l.txids())
	}
	if d := n.deleteMessage(pid, "t1", a...); !d.Success {
		t.Fatal("tenant a could not delete its message")
	}
	if status, _ := n.call("DELETE", messagePath(pid, "t2"), nil); status != http.StatusUnauthorized {
		t.Fatalf("delete without a token: %d", status)
	}
}
