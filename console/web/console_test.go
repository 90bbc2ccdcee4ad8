package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsole drives the console in Debian's Chromium against the real
// bridge binary, with tokens configured: what each page shows, as the
// tokens of two tenants and an admin see it, and what its controls do.
// The steps share the bridge, the browser and the data set up first; the
// maintenance switch goes last.
func TestConsole(t *testing.T) {
	ctx := browser(t) // first: a machine without Chromium fails at once
	b := startBridge(t)

	// Tenant A: queue orders over three partitions, read by group billing
	// so that it lags: p1 popped 2 and both acknowledged, p2 popped 2 and
	// one acknowledged (its lease still held), p3 never popped.
	for p, n := range map[string]int{"p1": 3, "p2": 2, "p3": 1} {
		for i := 1; i <= n; i++ {
			b.push(t, readToken, map[string]any{"queue": "orders", "partition": p,
				"transactionId": fmt.Sprintf("o-%s-%d", p, i), "payload": map[string]any{"order": i, "partition": p}})
		}
	}
	p1 := b.pop(t, readToken, "orders", "p1", "billing", 2)
	b.ack(t, readToken, "billing", p1, "completed", p1.Messages[0].TransactionID, p1.Messages[1].TransactionID)
	p2 := b.pop(t, readToken, "orders", "p2", "billing", 2)
	if len(p1.Messages) != 2 || len(p2.Messages) != 2 {
		t.Fatalf("pops delivered %d and %d messages, want 2 and 2", len(p1.Messages), len(p2.Messages))
	}
	b.ack(t, readToken, "billing", p2, "completed", p2.Messages[0].TransactionID)
	// A second group, caught up on p3.
	a3 := b.pop(t, readToken, "orders", "p3", "audit", 10)
	b.ack(t, readToken, "audit", a3, "completed", a3.Messages[0].TransactionID)
	// An encrypted queue: the pages show what was pushed.
	b.must(t, http.StatusOK, "POST", "/api/v1/configure", readToken,
		map[string]any{"queue": "vault", "options": map[string]any{"encryptionEnabled": true}}, nil)
	b.push(t, readToken, map[string]any{"queue": "vault", "transactionId": "v-1", "payload": map[string]any{"pin": "1234"}})
	// A dead letter: retryLimit 1, failed twice.
	b.must(t, http.StatusOK, "POST", "/api/v1/configure", readToken,
		map[string]any{"queue": "jobs", "options": map[string]any{"retryLimit": 1}}, nil)
	b.push(t, readToken, map[string]any{"queue": "jobs", "partition": "work", "transactionId": "j-1", "payload": map[string]any{"job": 1}})
	for range 2 {
		j := b.pop(t, readToken, "jobs", "work", "workers", 1)
		b.ack(t, readToken, "workers", j, "failed", "j-1")
	}
	// A streaming query reading orders, with state on p1 and p2 (cycles
	// without an acknowledgement: state alone).
	var reg struct {
		QueryID string `json:"query_id"`
	}
	b.must(t, http.StatusOK, "POST", "/streams/v1/queries", readToken,
		map[string]any{"name": "order-totals", "source_queue": "orders", "sink_queue": "totals", "config_hash": "h"}, &reg)
	for p, keys := range map[string][]string{p1.PartitionID: {"w1", "w2"}, p2.PartitionID: {"w1"}} {
		var ops []map[string]any
		for _, k := range keys {
			ops = append(ops, map[string]any{"type": "upsert", "key": k, "value": map[string]any{"acc": 1, "windowEnd": 1000}})
		}
		b.must(t, http.StatusOK, "POST", "/streams/v1/cycle", readToken, map[string]any{"query_id": reg.QueryID, "partition_id": p, "state_ops": ops}, nil)
	}
	// Tenant B's queue, which tenant A's tokens must never show.
	b.push(t, tenantBTok, map[string]any{"queue": "secret-b", "payload": map[string]any{"b": true}})

	admin := newTab(t, ctx, b, "admin")
	reader := newTab(t, ctx, b, "tenant A")
	other := newTab(t, ctx, b, "tenant B")
	// Each tab is asked for its token once; it keeps it (sessionStorage).
	admin.login(t, "/console/queues", adminToken)
	reader.login(t, "/console/queues", readToken)
	other.login(t, "/console/queues", tenantBTok)

	t.Run("queues of the token's tenant only", func(t *testing.T) {
		reader.open(t, "/console/queues")
		reader.until(t, "orders listed with 3 partitions and 6 messages",
			`(r => r && r.querySelector('[data-field="partitions"]').textContent === "3" &&
			   r.querySelector('[data-field="messages"]').textContent === "6")(document.querySelector('#queues-table tr[data-queue="orders"]'))`)
		reader.until(t, "jobs' options read", `(document.querySelector('tr[data-queue="jobs"] [data-field="options"]') || {}).textContent.includes("retryLimit 1")`)
		if eval[bool](t, reader, `document.querySelector('tr[data-queue="secret-b"]') !== null`) {
			t.Fatal("tenant A's token sees tenant B's queue secret-b")
		}
		other.open(t, "/console/queues")
		other.until(t, "secret-b listed", `document.querySelector('#queues-table tr[data-queue="secret-b"]') !== null`)
		if n := eval[int](t, other, `document.querySelectorAll('#queues-table tr[data-queue]').length`); n != 1 {
			t.Fatalf("tenant B's token sees %d queues, want only secret-b:\n%s", n, other.text(t))
		}
		// The push rate: the change of the count between refreshes.
		b.push(t, readToken, map[string]any{"queue": "ticks", "payload": 1})
		reader.until(t, "ticks listed", `document.querySelector('tr[data-queue="ticks"]') !== null`)
		for i := range 20 {
			b.push(t, readToken, map[string]any{"queue": "ticks", "payload": i})
		}
		reader.until(t, "a push rate for ticks", `parseFloat((document.querySelector('tr[data-queue="ticks"] [data-field="rate"]') || {}).textContent) > 0`)
		reader.screenshot(t, "queues")
	})

	t.Run("queue page: partitions, offsets and lag", func(t *testing.T) {
		reader.open(t, "/console/queues/orders")
		reader.until(t, "the streaming query's state size", `(r => r && r.querySelector('[data-field="stateRows"]').textContent === "3" &&
			r.querySelector('[data-field="statePartitions"]').textContent === "2")(document.querySelector('#streams tr[data-query="order-totals"]'))`)
		for p, last := range map[string]int{"p1": 3, "p2": 2, "p3": 1} {
			reader.until(t, p+" last offset", fmt.Sprintf(
				`(document.querySelector('#partitions tr[data-partition="%s"] [data-field="lastOffset"]') || {}).textContent === "%d"`, p, last))
		}
		row := func(p, field string) string {
			return fmt.Sprintf(`(document.querySelector('#groups [data-group="billing"] tr[data-partition="%s"] [data-field="%s"]') || {}).textContent`, p, field)
		}
		reader.until(t, "audit caught up on p3", `(document.querySelector('#groups [data-group="audit"] tr[data-partition="p3"] [data-field="lag"]') || {}).textContent === "0"`)
		reader.until(t, "billing's lag on p1 and p2", row("p1", "lag")+` === "1" && `+row("p2", "lag")+` === "1" && `+
			row("p1", "cursor")+` === "2" && `+row("p2", "cursor")+` === "1"`)
		if got := eval[string](t, reader, row("p2", "lease")); got != p2.LeaseID {
			t.Fatalf("p2's lease holder shows %q, want the pop's lease %s", got, p2.LeaseID)
		}
		if got := eval[string](t, reader, row("p1", "lease")); got != "—" {
			t.Fatalf("p1's lease (released by the whole acknowledgement) shows %q", got)
		}
		// p3 was never read by billing: its whole content is lag, and it
		// counts in the group's lag (1 + 1 + 1).
		if got := eval[string](t, reader, row("p3", "lag")); got != "1" {
			t.Fatalf("p3's lag shows %q, want 1", got)
		}
		if got := eval[string](t, reader, `document.querySelector('#groups [data-group="billing"] tr[data-partition="p3"]').dataset.popped`); got != "false" {
			t.Fatalf("p3 shows popped %q for billing, which never popped it", got)
		}
		if got := eval[string](t, reader, `document.querySelector('#groups [data-group="billing"] h3 [data-field="lag"]').textContent`); got != "lag 3" {
			t.Fatalf("billing's lag shows %q, want lag 3 (every partition counted)", got)
		}
		reader.screenshot(t, "queue")
	})

	t.Run("queue page: a queue that does not exist says so", func(t *testing.T) {
		reader.open(t, "/console/queues/no-such-queue")
		reader.until(t, "the page says there is no such queue",
			`(document.getElementById("queue-missing") || {textContent: ""}).textContent.startsWith("No queue no-such-queue")`)
		// Tenant B's queue is no queue for tenant A's token.
		reader.open(t, "/console/queues/secret-b")
		reader.until(t, "another tenant's queue is no queue", `document.getElementById("queue-missing") !== null`)
	})

	t.Run("messages: browse by offset, find by transactionId", func(t *testing.T) {
		reader.open(t, "/console/messages?queue=orders&partition=p1&from=1")
		reader.until(t, "three messages of p1", `document.querySelectorAll('#messages article[data-offset]').length === 3`)
		got := eval[string](t, reader, `document.querySelector('#messages article[data-offset="2"] [data-field="payload"]').textContent`)
		if want := "{\n  \"order\": 2,\n  \"partition\": \"p1\"\n}"; got != want {
			t.Fatalf("offset 2's payload shows %q, want %q", got, want)
		}
		reader.do(t, "find o-p1-3", chromedp.SendKeys(chromedp.CSS(`#find-transaction`), "o-p1-3"), chromedp.Click(chromedp.CSS(`#find-submit`)))
		reader.until(t, "o-p1-3 found", `(document.querySelector('#found-message [data-field="payload"]') || {}).textContent === "{\n  \"order\": 3,\n  \"partition\": \"p1\"\n}"`)
		reader.screenshot(t, "messages")
		reader.open(t, "/console/messages?queue=orders&partition=p1&transactionId=nope")
		reader.until(t, "an unknown transactionId said so", `document.getElementById("found-none") !== null`)
		reader.open(t, "/console/messages?queue=vault&partition=Default&from=1")
		reader.until(t, "the encrypted queue's payload decrypted", `(document.querySelector('#messages article[data-offset="1"] [data-field="payload"]') || {}).textContent === "{\n  \"pin\": \"1234\"\n}"`)
	})

	t.Run("dead letters: shown, sent back, delivered again", func(t *testing.T) {
		const page = "/console/dead-letters?queue=jobs&group=workers"
		reader.open(t, page)
		reader.until(t, "j-1 listed for the tenant token", `document.querySelector('#dead-letter-table tr[data-transaction-id="j-1"]') !== null`)
		if n := eval[int](t, reader, `document.querySelectorAll('button[data-action="requeue"], #requeue-all').length`); n != 0 {
			t.Fatalf("a tenant token is offered %d send-back buttons", n)
		}
		if status, out := b.call(t, "POST", "/api/v1/dlq/requeue", readToken, map[string]any{"queue": "jobs"}); status != http.StatusForbidden {
			t.Fatalf("requeue with a tenant token: %d %s, want 403", status, out)
		}
		admin.open(t, page)
		sel := `#dead-letter-table tr[data-transaction-id="j-1"]`
		admin.until(t, "j-1 listed with its error and retries", `(r => r && r.querySelector('[data-field="error"]').textContent === "boom: j-1" &&
			r.querySelector('[data-field="retries"]').textContent === "1" &&
			r.querySelector('[data-field="payload"]').textContent.includes('"job": 1'))(document.querySelector('`+sel+`'))`)
		admin.screenshot(t, "dead-letters")
		admin.do(t, "send j-1 back", chromedp.Click(chromedp.CSS(sel+` button[data-action="requeue"]`)))
		admin.until(t, "sent back, list empty", `document.getElementById("requeue-result").dataset.requeued === "1" && document.getElementById("dead-letter-total").textContent === "0"`)
		again := b.pop(t, readToken, "jobs", "work", "workers", 10)
		if len(again.Messages) != 1 || string(again.Messages[0].Data) != `{"job":1}` {
			t.Fatalf("after sending back, the group's pop got %+v, want the job again", again.Messages)
		}
	})

	t.Run("overview", func(t *testing.T) {
		admin.open(t, "/console/")
		admin.until(t, "charts with history and this bridge listed", `document.querySelector('[data-chart="pushed"]').dataset.points > 0 &&
			document.querySelectorAll('#bridges tr[data-bridge]').length === 1 && document.querySelector('#bridges tr.self') !== null`)
		admin.until(t, "totals counted", `parseInt(document.getElementById("total-pushed").textContent.replace(/,/g, "")) >= 30`)
		admin.screenshot(t, "overview")
	})

	t.Run("a tenant token gets no maintenance switch", func(t *testing.T) {
		reader.open(t, "/console/")
		reader.until(t, "role shown", `document.getElementById("role") !== null`)
		if got := eval[string](t, reader, `document.getElementById("role").dataset.admin + " " + (document.getElementById("maintenance-switch") === null)`); got != "false true" {
			t.Fatalf("tenant token: admin %q (want false, and no switch)", got)
		}
		for _, m := range []string{"GET", "POST"} {
			var body any
			if m == "POST" {
				body = map[string]any{"enabled": true}
			}
			if status, out := b.call(t, m, "/api/v1/system/maintenance", readToken, body); status != http.StatusForbidden {
				t.Fatalf("%s maintenance with a tenant token: %d %s, want 403", m, status, out)
			}
		}
	})

	t.Run("maintenance switch", func(t *testing.T) {
		admin.open(t, "/console/")
		admin.until(t, "the switch, off", `(document.getElementById("maintenance-switch") || {dataset: {}}).dataset.enabled === "false"`)
		admin.do(t, "switch maintenance on", chromedp.Click(chromedp.CSS(`#maintenance-switch`)))
		admin.until(t, "the switch, on", `document.getElementById("maintenance-switch").dataset.enabled === "true"`)
		var m struct {
			MaintenanceMode  bool
			BufferedMessages int
		}
		b.must(t, http.StatusOK, "GET", "/api/v1/system/maintenance", adminToken, nil, &m)
		if !m.MaintenanceMode {
			t.Fatal("the switch shows on, the route says off")
		}
		if rs := b.push(t, readToken, map[string]any{"queue": "held", "transactionId": "h-1", "payload": "held"}); rs[0].Status != "buffered" {
			t.Fatalf("a push in maintenance: %+v, want buffered", rs[0])
		}
		b.must(t, http.StatusOK, "GET", "/api/v1/system/maintenance", adminToken, nil, &m)
		if m.BufferedMessages < 1 {
			t.Fatalf("bufferedMessages %d after a buffered push", m.BufferedMessages)
		}
		admin.do(t, "switch maintenance off", chromedp.Click(chromedp.CSS(`#maintenance-switch`)))
		admin.until(t, "the switch, off again", `document.getElementById("maintenance-switch").dataset.enabled === "false"`)
		b.must(t, http.StatusOK, "GET", "/api/v1/system/maintenance", adminToken, nil, &m)
		if m.MaintenanceMode {
			t.Fatal("the switch shows off, the route says on")
		}
		// The drain writes the buffered push once maintenance is off.
		deadline := time.Now().Add(30 * time.Second)
		for {
			var r struct {
				Messages []struct{ TransactionID string }
			}
			status, out := b.call(t, "GET", "/api/v1/messages?queue=held&partition=Default&from=1&waitMs=1000", readToken, nil)
			if status == http.StatusOK && json.Unmarshal(out, &r) == nil && len(r.Messages) == 1 && r.Messages[0].TransactionID == "h-1" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the buffered push was not written after maintenance: %+v", r.Messages)
			}
		}
	})
}
