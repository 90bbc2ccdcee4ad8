package bridge_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/segment"
)

// txnAnswer is a transaction's answer as Queen's clients read it (success,
// error) with the results the bridge lists.
type txnAnswer struct {
	TransactionID string  `json:"transactionId"`
	Success       bool    `json:"success"`
	Error         *string `json:"error"`
	Results       []struct {
		Index         int    `json:"index"`
		Type          string `json:"type"`
		Success       bool   `json:"success"`
		TransactionID string `json:"transactionId"`
		MessageID     string `json:"messageId"`
		PartitionID   string `json:"partitionId"`
		QueueName     string `json:"queueName"`
		Partition     string `json:"partition"`
		Offset        int64  `json:"offset"`
		DLQ           bool   `json:"dlq"`
	} `json:"results"`
}

// txnBuilder builds a body as Queen's TransactionBuilder does: one push
// operation per queue().push() call (items with queue, payload and the
// partition when one was set), acks with transactionId, partitionId,
// status and consumerGroup when one was given, and the popped messages'
// leases in requiredLeases.
type txnBuilder struct {
	Operations     []map[string]any `json:"operations"`
	RequiredLeases []string         `json:"requiredLeases"`
}

func (b *txnBuilder) push(queue, partition string, payloads ...any) *txnBuilder {
	var its []map[string]any
	for _, p := range payloads {
		it := map[string]any{"queue": queue, "payload": p}
		if partition != "" {
			it["partition"] = partition
		}
		its = append(its, it)
	}
	b.Operations = append(b.Operations, map[string]any{"type": "push", "items": its})
	return b
}

func (b *txnBuilder) ack(p popped, status, group string) *txnBuilder {
	for _, m := range p.Messages {
		op := map[string]any{"type": "ack", "transactionId": m.TransactionID, "partitionId": m.PartitionID, "status": status}
		if group != "" {
			op["consumerGroup"] = group
		}
		b.Operations = append(b.Operations, op)
		b.RequiredLeases = append(b.RequiredLeases, m.LeaseID)
	}
	return b
}

func (b *txnBuilder) ackID(txid, partitionID, group string) *txnBuilder {
	b.Operations = append(b.Operations, map[string]any{"type": "ack", "transactionId": txid, "partitionId": partitionID, "status": "completed", "consumerGroup": group})
	return b
}

func (b *txnBuilder) body() []byte {
	out, _ := json.Marshal(b)
	return out
}

// commit posts a transaction and decodes a 200 answer.
func (n *node) commit(body []byte) txnAnswer {
	n.t.Helper()
	status, out := n.post("/api/v1/transaction", body)
	if status != http.StatusOK {
		n.t.Fatalf("transaction: %d %s", status, out)
	}
	var a txnAnswer
	if err := json.Unmarshal(out, &a); err != nil {
		n.t.Fatalf("transaction answer %s: %v", out, err)
	}
	return a
}

func errText(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

// A transaction that pushes to B and acknowledges a popped message of A
// commits both: B pops the pushed messages at once (announced before the
// answer), A's group finds nothing more, the answer lists every operation.
func TestTransactionCommitsPushAndAck(t *testing.T) {
	n := newNode(t, nodeOpts{})
	n.pushHTTP(items(item("txa", "p", "a1"), item("txa", "p", "a2")))
	status, p := n.popHTTP("txa", "", "consumerGroup", "g", "batch", "1")
	if status != http.StatusOK || len(p.Messages) != 1 {
		t.Fatalf("pop A: %d %+v", status, p)
	}
	a := n.commit((&txnBuilder{}).push("txb", "p1", map[string]int{"v": 1}, map[string]int{"v": 2}).ack(p, "completed", "g").body())
	if !a.Success || len(a.Results) != 3 || a.TransactionID == "" {
		t.Fatalf("answer %+v (error %s)", a, errText(a.Error))
	}
	r0, r1, r2 := a.Results[0], a.Results[1], a.Results[2]
	if r0.Type != "push" || r0.QueueName != "txb" || r0.Partition != "p1" || r0.Offset != 1 || r1.Offset != 2 || r0.MessageID == "" || r0.PartitionID == "" {
		t.Fatalf("push results %+v %+v", r0, r1)
	}
	if r2.Type != "ack" || r2.Index != 2 || !r2.Success || r2.TransactionID != "a1" || r2.DLQ {
		t.Fatalf("ack result %+v", r2)
	}
	status, b := n.popHTTP("txb", "", "batch", "10")
	if status != http.StatusOK || len(b.Messages) != 2 || string(b.Messages[1].Data) != `{"v":2}` || b.Messages[0].ID != r0.MessageID {
		t.Fatalf("pop B: %d %+v", status, b)
	}
	// A's group goes on after a1: a2 next.
	status, p = n.popHTTP("txa", "", "consumerGroup", "g", "batch", "10")
	if status != http.StatusOK || len(p.Messages) != 1 || p.Messages[0].TransactionID != "a2" {
		t.Fatalf("A after the transaction: %d %+v", status, p)
	}
	if v := metricValue(t, n, `queen_transactions_total{outcome="committed"}`); v != 1 {
		t.Fatalf("committed counter %v", v)
	}
	// failed is a dead letter at once in a transaction.
	a = n.commit((&txnBuilder{}).ack(p, "failed", "g").body())
	if !a.Success || !a.Results[0].DLQ {
		t.Fatalf("failed ack: %+v", a)
	}
	if c := n.count(`SELECT count(*) FROM queen.dead_letters WHERE consumer_group = 'g'`); c != 1 {
		t.Fatalf("%d dead letters", c)
	}
}

// An unknown acknowledgement aborts everything: B stays empty, A's popped
// message is still leased and comes back once its lease expires; nothing
// was written, so no offset was spent either. The replay of a committed
// transaction (the client resending after a lost answer) fails on its ack
// and pushes nothing twice.
func TestTransactionAllOrNothing(t *testing.T) {
	n := newNode(t, nodeOpts{})
	n.configureQueue("rba", `{"leaseTime":1}`)
	n.pushHTTP(items(item("rba", "p", "a1")))
	_, p := n.popHTTP("rba", "")
	if len(p.Messages) != 1 {
		t.Fatalf("pop: %+v", p)
	}
	body := (&txnBuilder{}).push("rbb", "", "x").ack(p, "completed", "").ackID("no-such-message", p.PartitionID, "").body()
	a := n.commit(body)
	if a.Success || a.Error == nil || !strings.HasPrefix(*a.Error, "ACK operation failed: Message not found (operations[2]: ") || len(a.Results) != 0 {
		t.Fatalf("answer: %+v (%s)", a, errText(a.Error))
	}
	if c := n.count(`SELECT count(*) FROM queen.queues WHERE name = 'rbb'`); c != 0 {
		t.Fatal("the aborted transaction made queue rbb")
	}
	if status, _ := n.popHTTP("rba", ""); status != http.StatusNoContent {
		t.Fatalf("the message is still leased: %d", status)
	}
	var again popped
	waitUntil(t, "a1 to come back after its lease", 30*time.Second, func() bool {
		status, q := n.popHTTP("rba", "")
		again = q
		return status == http.StatusOK
	})
	if len(again.Messages) != 1 || again.Messages[0].TransactionID != "a1" {
		t.Fatalf("redelivered: %+v", again)
	}
	if v := metricValue(t, n, `queen_transactions_total{outcome="rolled_back"}`); v != 1 {
		t.Fatalf("rolled_back counter %v", v)
	}

	// Commit for real, then replay the very same body.
	body = (&txnBuilder{}).push("rbb", "", "x").ack(again, "completed", "").body()
	if a := n.commit(body); !a.Success || a.Results[0].Offset != 1 {
		t.Fatalf("commit: %+v (%s)", a, errText(a.Error))
	}
	a = n.commit(body)
	if a.Success || !strings.Contains(errText(a.Error), "Message not found (operations[1]") {
		t.Fatalf("replay: %+v (%s)", a, errText(a.Error))
	}
	if c := n.count(`SELECT p.last_offset FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'rbb'`); c != 1 {
		t.Fatalf("rbb holds %d messages after the replay", c)
	}
}

// A pushed transactionId that is stored in its partition inside the
// window, or that repeats an earlier item of the transaction, aborts the
// whole transaction, naming the operation.
func TestTransactionDuplicateAborts(t *testing.T) {
	n := newNode(t, nodeOpts{})
	n.pushHTTP(items(item("dup", "p", "stored")))
	for _, c := range []struct {
		name, body, want string
	}{
		{"stored", `{"operations":[{"type":"push","items":[{"queue":"dup-other","payload":1},{"queue":"dup","partition":"p","transactionId":"fresh"},{"queue":"dup","partition":"p","transactionId":"stored"}]}]}`,
			`operations[2]: duplicate transactionId "stored" in dup/p (offset 1)`},
		{"repeated", `{"operations":[{"type":"push","queue":"dup-other","transactionId":"t"},{"type":"push","items":[{"queue":"dup","partition":"p","transactionId":"r"},{"queue":"dup","partition":"p","transactionId":"r"}]}]}`,
			`operations[2]: duplicate transactionId "r" in dup/p (repeats operations[1])`},
	} {
		a := n.commit([]byte(c.body))
		if a.Success || errText(a.Error) != c.want {
			t.Errorf("%s: %+v (%s)", c.name, a, errText(a.Error))
		}
	}
	if c := n.count(`SELECT sum(last_offset) FROM queen.log_partitions`); c != 1 {
		t.Fatalf("offsets moved: %d", c)
	}
	if c := n.count(`SELECT count(*) FROM queen.queues WHERE name = 'dup-other'`); c != 0 {
		t.Fatal("an aborted transaction made a queue")
	}
}

// Bad bodies are 400s that name the operation and write nothing;
// maintenance mode is a 503 without an attempt.
func TestTransactionRefusals(t *testing.T) {
	n := newNode(t, nodeOpts{})
	for _, c := range []struct{ body, want string }{
		{`{}`, "operations array required"},
		{`{"operations":[]}`, "operations array cannot be empty"},
		{`{"operations":[{"type":"push","items":[{"queue":"v","payload":1}]},{"type":"pop"}]}`, `operations[1]: unknown operation type \"pop\"`},
		{`{"operations":[{"type":"push","items":[{"queue":"v"},{"queue":""}]}]}`, "operations[1].queue must be 1..255 bytes"},
		{`{"operations":[{"type":"push","queue":"v"},{"type":"ack","transactionId":"t","partitionId":"1","status":"retry"}]}`, "operations[1].status must be completed, success, failed or dlq"},
		{`{"operations":[{"type":"ack","transactionId":"t"}]}`, "operations[0].partitionId is required"},
		{`not json`, "body is not JSON"},
	} {
		status, out := n.post("/api/v1/transaction", []byte(c.body))
		if status != http.StatusBadRequest || !strings.Contains(string(out), c.want) {
			t.Errorf("%s: %d %s", c.body, status, out)
		}
	}
	if c := n.count(`SELECT count(*) FROM queen.queues`); c != 0 {
		t.Fatalf("refused transactions made %d queues", c)
	}
	if status, out := n.post("/api/v1/system/maintenance", []byte(`{"enabled": true}`)); status != http.StatusOK {
		t.Fatalf("maintenance: %d %s", status, out)
	}
	status, out := n.post("/api/v1/transaction", (&txnBuilder{}).push("v", "", 1).body())
	if status != http.StatusServiceUnavailable || !strings.Contains(string(out), "maintenance") {
		t.Fatalf("in maintenance: %d %s", status, out)
	}
	if c := n.count(`SELECT count(*) FROM queen.queues`); c != 0 || n.sp.Stats().Records != 0 {
		t.Fatal("a transaction in maintenance mode wrote or spooled")
	}
	if v := metricValue(t, n, `queen_transactions_total{outcome="refused"}`); v != 8 {
		t.Fatalf("refused counter %v", v)
	}
}

// Over NATS: the same body and answer on <prefix>.v1.transaction, and on
// <prefix>.v1.transaction.<tenant> for that tenant (single-account mode);
// a bad body is a micro error.
func TestTransactionOverNATS(t *testing.T) {
	n := newNode(t, nodeOpts{})
	n.pushHTTP(items(item("na", "p", "a1")))
	_, p := n.popHTTP("na", "")
	msg, err := n.nc.Request(n.prefix+".v1.transaction", (&txnBuilder{}).push("nb", "", 1).ack(p, "completed", "").body(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var a txnAnswer
	if err := json.Unmarshal(msg.Data, &a); err != nil || !a.Success || len(a.Results) != 2 || msg.Header.Get("Nats-Service-Error-Code") != "" {
		t.Fatalf("answer %s: %v", msg.Data, err)
	}
	tenant := uuid.NewString()
	msg, err = n.nc.Request(n.prefix+".v1.transaction."+tenant, (&txnBuilder{}).push("nb", "", 2).body(), 10*time.Second)
	if err != nil || !strings.Contains(string(msg.Data), `"success":true`) {
		t.Fatalf("tenant transaction: %s %v", msg.Data, err)
	}
	if c := n.count(`SELECT count(*) FROM queen.queues WHERE name = 'nb' AND tenant = $1`, tenant); c != 1 {
		t.Fatal("the tenant's transaction did not write its tenant's queue")
	}
	if c := n.count(`SELECT p.last_offset FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'nb' AND q.tenant = $1`, uuid.UUID{}.String()); c != 1 {
		t.Fatalf("the default tenant's nb holds %d", c)
	}
	msg, err = n.nc.Request(n.prefix+".v1.transaction", []byte(`{"operations":[]}`), 10*time.Second)
	if err != nil || msg.Header.Get("Nats-Service-Error-Code") != "400" || !strings.Contains(string(msg.Data), "cannot be empty") {
		t.Fatalf("bad body over NATS: %v %v %s", err, msg.Header, msg.Data)
	}
}

// A pop parked on B (a queue no push made yet) wakes when a transaction
// that pushes to B commits.
func TestTransactionWakesParkedPops(t *testing.T) {
	n := newNode(t, nodeOpts{})
	done := make(chan popped, 1)
	go func() {
		_, p := n.popHTTP("wake", "", "wait", "true", "timeout", "60000", "batch", "10")
		done <- p
	}()
	waitUntil(t, "the pop to park", 10*time.Second, func() bool { return metricValue(t, n, "queen_parked_reads") >= 1 })
	start := time.Now()
	if a := n.commit((&txnBuilder{}).push("wake", "p", "m1", "m2").body()); !a.Success {
		t.Fatalf("commit: %s", errText(a.Error))
	}
	p := <-done
	if len(p.Messages) != 2 || string(p.Messages[0].Data) != `"m1"` {
		t.Fatalf("woken pop: %+v", p)
	}
	t.Logf("the parked pop answered %v after the commit", time.Since(start))
}

// In the accounts mode a tenant account sends transactions through its
// import and they act for its tenant; the subject naming a tenant is not
// exported.
func TestTransactionAccountsMode(t *testing.T) {
	url := accountsNATS(t)
	tenantA := uuid.New()
	n := newNode(t, nodeOpts{natsURL: url, prefix: "queen", natsOpts: []nats.Option{nats.UserInfo("bridge", "bridge-pw")},
		accounts: map[string]tenancy.TenantID{"TENANT_A": tenancy.TenantID(tenantA)}})
	a := connectTenant(t, url, "tenant-a", "a-pw")
	msg, err := a.Request("queen.v1.transaction", (&txnBuilder{}).push("out", "", 1).body(), 30*time.Second)
	if err != nil || !strings.Contains(string(msg.Data), `"success":true`) {
		t.Fatalf("A's transaction: %v %s", err, msg.Data)
	}
	if c := n.count(`SELECT count(*) FROM queen.queues WHERE tenant = $1 AND name = 'out'`, tenantA); c != 1 {
		t.Fatal("A's transaction did not write A's queue")
	}
	subject := "queen.v1.transaction." + uuid.NewString()
	if err := a.Publish(subject, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	a.violation(t, subject)
	// From the bridges' own account there is no tenant: refused.
	msg = n.natsRequest(t, "queen.v1.transaction", (&txnBuilder{}).push("out", "", 2).body())
	if msg.Header.Get("Nats-Service-Error-Code") != "403" {
		t.Fatalf("from the bridge account: %v %s", msg.Header, msg.Data)
	}
}

func (n *node) natsRequest(t *testing.T, subject string, body []byte) *nats.Msg {
	t.Helper()
	msg, err := n.nc.Request(subject, body, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// A transaction's pushes to an encrypted queue are sealed as a push's
// (never stored in plaintext) and pop as sent; without a key the
// transaction is not committed.
func TestTransactionSealsEncryptedQueues(t *testing.T) {
	n := newNode(t, nodeOpts{keys: testKeys})
	n.configureQueue("sealed", `{"encryptionEnabled":true}`)
	if a := n.commit((&txnBuilder{}).push("sealed", "p", map[string]string{"card": "PLAINTEXT-MARKER"}).body()); !a.Success {
		t.Fatalf("commit: %s", errText(a.Error))
	}
	f := storedFrame(t, n, "sealed", "p", 1)
	if f.Flags&segment.FlagEncrypted == 0 || bytes.Contains(f.Payload, []byte("PLAINTEXT-MARKER")) {
		t.Fatalf("stored frame flags %b: not sealed", f.Flags)
	}
	if _, p := n.popHTTP("sealed", "p"); len(p.Messages) != 1 || string(p.Messages[0].Data) != `{"card":"PLAINTEXT-MARKER"}` {
		t.Fatalf("pop: %+v", p)
	}

	// A bridge without keys on the same database.
	keyless := newNode(t, nodeOpts{dsn: n.db.Pool().Config().ConnConfig.ConnString()})
	a := keyless.commit((&txnBuilder{}).push("plain", "", 1).push("sealed", "", 2).body())
	if a.Success || !strings.Contains(errText(a.Error), "operations[1]: queue \"sealed\" has encryption enabled but no QUEEN_ENCRYPTION_KEY") {
		t.Fatalf("without a key: %+v (%s)", a, errText(a.Error))
	}
	if c := keyless.count(`SELECT count(*) FROM queen.log_segments`); c != 1 {
		t.Fatalf("%d segments written", c)
	}
}
