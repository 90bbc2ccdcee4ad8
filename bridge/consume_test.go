package bridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testenv"
)

// popped is a pop answer as Queen's clients read it.
type popped struct {
	Success           bool   `json:"success"`
	Queue             string `json:"queue"`
	Partition         string `json:"partition"`
	PartitionID       string `json:"partitionId"`
	LeaseID           string `json:"leaseId"`
	ConsumerGroup     string `json:"consumerGroup"`
	PartitionsClaimed int    `json:"partitionsClaimed"`
	Messages          []struct {
		ID            string          `json:"id"`
		TransactionID string          `json:"transactionId"`
		TraceID       *string         `json:"traceId"`
		Data          json.RawMessage `json:"data"`
		Encoding      string          `json:"encoding"`
		ProducerSub   *string         `json:"producerSub"`
		CreatedAt     string          `json:"createdAt"`
		PartitionID   string          `json:"partitionId"`
		Partition     string          `json:"partition"`
		LeaseID       string          `json:"leaseId"`
		ConsumerGroup string          `json:"consumerGroup"`
	} `json:"messages"`
}

type ackAnswer struct {
	Index         int     `json:"index"`
	TransactionID string  `json:"transactionId"`
	Success       bool    `json:"success"`
	Error         *string `json:"error"`
	QueueName     string  `json:"queueName"`
	PartitionName string  `json:"partitionName"`
	LeaseReleased bool    `json:"leaseReleased"`
	DLQ           bool    `json:"dlq"`
}

// popHTTP pops as Queen's client does: GET /api/v1/pop/queue/Q[/partition/P]?...
func (n *node) popHTTP(queue, partition string, params ...string) (int, popped) {
	n.t.Helper()
	return n.popWith(nil, queue, partition, params...)
}

// popWith is popHTTP with header (name, value, ...) sent too.
func (n *node) popWith(header []string, queue, partition string, params ...string) (int, popped) {
	n.t.Helper()
	path := "/api/v1/pop/queue/" + url.PathEscape(queue)
	if partition != "" {
		path += "/partition/" + url.PathEscape(partition)
	}
	q := url.Values{}
	for i := 0; i+1 < len(params); i += 2 {
		q.Set(params[i], params[i+1])
	}
	status, out := n.get(path+"?"+q.Encode(), header...)
	var p popped
	if status == http.StatusOK {
		if err := json.Unmarshal(out, &p); err != nil {
			n.t.Fatalf("pop answer %s: %v", out, err)
		}
	} else if status != http.StatusNoContent {
		n.t.Fatalf("pop %s: %d %s", path, status, out)
	} else if len(out) != 0 {
		n.t.Fatalf("204 with a body: %s", out)
	}
	return status, p
}

// ackAll acknowledges a pop's messages in one batch, as Queen's client's
// consume does (status per message).
func (n *node) ackAll(p popped, group string, status func(txid string) string) []ackAnswer {
	n.t.Helper()
	return n.ackWith(nil, p, group, status)
}

// ackWith is ackAll with header (name, value, ...) sent too.
func (n *node) ackWith(header []string, p popped, group string, status func(txid string) string) []ackAnswer {
	n.t.Helper()
	type ack struct {
		TransactionID string `json:"transactionId"`
		PartitionID   string `json:"partitionId"`
		Status        string `json:"status"`
		LeaseID       string `json:"leaseId,omitempty"`
		Error         string `json:"error,omitempty"`
	}
	var acks []ack
	for _, m := range p.Messages {
		st := "completed"
		if status != nil {
			st = status(m.TransactionID)
		}
		a := ack{TransactionID: m.TransactionID, PartitionID: m.PartitionID, Status: st, LeaseID: m.LeaseID}
		if st == "failed" {
			a.Error = "handler failed"
		}
		acks = append(acks, a)
	}
	body, _ := json.Marshal(map[string]any{"acknowledgments": acks, "consumerGroup": group})
	code, out := n.post("/api/v1/ack/batch", body, header...)
	var res []ackAnswer
	if code != http.StatusOK || json.Unmarshal(out, &res) != nil || len(res) != len(acks) {
		n.t.Fatalf("ack: %d %s", code, out)
	}
	return res
}

func (n *node) configureQueue(queue, options string) {
	n.t.Helper()
	if status, out := n.post("/api/v1/configure", []byte(fmt.Sprintf(`{"queue":%q,"options":%s}`, queue, options))); status != http.StatusOK {
		n.t.Fatalf("configure: %d %s", status, out)
	}
}

func (n *node) pushN(queue string, partitions, perPartition int) {
	n.t.Helper()
	for k := 0; k < perPartition; k++ {
		var its []string
		for p := 0; p < partitions; p++ {
			its = append(its, item(queue, fmt.Sprintf("p%d", p), fmt.Sprintf("p%d-%d", p, k)))
		}
		n.pushHTTP(items(its...))
	}
}

// checkOrder: transactionIds "pP-K" arrive in K order per partition P.
type orderCheck struct {
	mu   sync.Mutex
	next map[string]int
	seen map[string]int
}

func newOrderCheck() *orderCheck { return &orderCheck{next: map[string]int{}, seen: map[string]int{}} }

func (o *orderCheck) add(t testing.TB, txid string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	p, k, _ := strings.Cut(txid, "-")
	kn, _ := strconv.Atoi(k)
	if kn != o.next[p] {
		t.Errorf("partition %s: got %s, want %d next", p, txid, o.next[p])
	}
	o.next[p] = kn + 1
	o.seen[txid]++
}

// Queue mode: four competing consumers of one queue (any-partition pops,
// batch 7, batch acks); every message delivered to exactly one, in order
// within its partition; then the queue pops empty (204).
func TestConsumeQueueModeCompeting(t *testing.T) {
	n := newNode(t, nodeOpts{})
	const parts, per = 6, 30
	n.pushN("work", parts, per)
	order := newOrderCheck()
	var wg sync.WaitGroup
	for c := 0; c < 4; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for empty := 0; empty < 3; {
				status, p := n.popHTTP("work", "", "batch", "7")
				if status == http.StatusNoContent {
					empty++
					continue
				}
				empty = 0
				if p.ConsumerGroup != "__QUEUE_MODE__" || p.LeaseID == "" || p.PartitionsClaimed != 1 {
					t.Errorf("pop: %+v", p)
				}
				for _, m := range p.Messages {
					order.add(t, m.TransactionID)
					if m.PartitionID != p.PartitionID || m.LeaseID != p.LeaseID || m.ProducerSub != nil || m.TraceID != nil || string(m.Data) != `{"n":1}` {
						t.Errorf("message: %+v", m)
					}
				}
				for _, a := range n.ackAll(p, "", nil) {
					if !a.Success || a.QueueName != "work" {
						t.Errorf("ack: %+v", a)
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(order.seen) != parts*per {
		t.Fatalf("%d of %d messages delivered", len(order.seen), parts*per)
	}
	for id, c := range order.seen {
		if c != 1 {
			t.Fatalf("%s delivered %d times", id, c)
		}
	}
	if status, _ := n.popHTTP("work", ""); status != http.StatusNoContent {
		t.Fatalf("drained queue: %d", status)
	}
	_, out := n.get("/metrics/prometheus")
	for _, want := range []string{`queen_consumer_delivered_total 180`, `queen_consumer_acks_total{status="completed",success="true"} 180`, `queen_consumer_lag_messages{consumer_group="__QUEUE_MODE__",queue="work",tenant="00000000-0000-0000-0000-000000000000"} 0`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// Two named groups each get every message (fan-out); partitions=N claims
// several partitions under one lease, batch capping the total.
func TestConsumeFanOutGroups(t *testing.T) {
	n := newNode(t, nodeOpts{})
	n.pushN("fan", 3, 4)
	for _, g := range []string{"billing", "audit"} {
		order := newOrderCheck()
		for {
			status, p := n.popHTTP("fan", "", "consumerGroup", g, "batch", "10", "partitions", "3")
			if status == http.StatusNoContent {
				break
			}
			if len(p.Messages) > 10 || p.ConsumerGroup != g {
				t.Fatalf("%s: %+v", g, p)
			}
			for _, m := range p.Messages {
				order.add(t, m.TransactionID)
				if m.LeaseID != p.LeaseID || m.ConsumerGroup != g {
					t.Fatalf("message: %+v", m)
				}
			}
			n.ackAll(p, g, nil)
		}
		if len(order.seen) != 12 {
			t.Fatalf("group %s got %d of 12", g, len(order.seen))
		}
	}
	// The first multi-partition pop claimed more than one partition.
	n.pushN("fan2", 3, 1)
	if _, p := n.popHTTP("fan2", "", "batch", "10", "partitions", "3"); p.PartitionsClaimed != 3 || len(p.Messages) != 3 {
		t.Fatalf("partitions=3: %+v", p)
	}
}

// A lease held elsewhere gives 204; lease expiry redelivers from the
// cursor; extension; auto-ack; an ack under a wrong lease fails alone.
func TestConsumeLeases(t *testing.T) {
	n := newNode(t, nodeOpts{})
	n.pushN("l", 1, 3)
	status, p := n.popHTTP("l", "p0", "batch", "2")
	if status != http.StatusOK || len(p.Messages) != 2 || p.Partition != "p0" {
		t.Fatalf("pop: %d %+v", status, p)
	}
	if status, _ := n.popHTTP("l", "p0"); status != http.StatusNoContent {
		t.Fatalf("leased elsewhere: %d", status)
	}
	code, out := n.post("/api/v1/lease/"+p.LeaseID+"/extend", []byte(`{"seconds":120}`))
	var ext []struct {
		LeaseID   string  `json:"leaseId"`
		Success   bool    `json:"success"`
		ExpiresAt *string `json:"expiresAt"`
	}
	if code != http.StatusOK || json.Unmarshal(out, &ext) != nil || !ext[0].Success || ext[0].ExpiresAt == nil {
		t.Fatalf("extend: %d %s", code, out)
	}
	// The lease runs out (made so here; waiting for it is not the test).
	if _, err := n.db.Pool().Exec(context.Background(), `UPDATE queen.consumer_cursors SET lease_expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	if code, out := n.post("/api/v1/lease/"+p.LeaseID+"/extend", []byte(`{}`)); code != http.StatusOK || !strings.Contains(string(out), `"success":false`) {
		t.Fatalf("extending an expired lease: %d %s", code, out)
	}
	// The stale lease's ack fails; the new one's delivery starts at the cursor again.
	_, again := n.popHTTP("l", "p0", "batch", "5")
	if len(again.Messages) != 3 || again.Messages[0].TransactionID != "p0-0" {
		t.Fatalf("after expiry: %+v", again)
	}
	if res := n.ackAll(p, "", nil); res[0].Success || res[0].Error == nil || !strings.Contains(*res[0].Error, "lease") {
		t.Fatalf("ack under the expired lease: %+v", res)
	}
	if res := n.ackAll(again, "", nil); !res[2].Success || !res[2].LeaseReleased {
		t.Fatalf("ack: %+v", res)
	}
	// Auto-ack: no lease, the cursor moves at pop.
	n.pushN("auto", 1, 2)
	_, a := n.popHTTP("auto", "", "autoAck", "true", "batch", "10")
	if len(a.Messages) != 2 || a.LeaseID != "" || a.Messages[0].LeaseID != "" {
		t.Fatalf("auto-ack: %+v", a)
	}
	if status, _ := n.popHTTP("auto", ""); status != http.StatusNoContent {
		t.Fatalf("after auto-ack: %d", status)
	}
}

// failed is retried retryLimit times, then dead-lettered and skipped;
// GET /api/v1/dlq lists it with its data.
func TestConsumeRetriesThenDLQ(t *testing.T) {
	n := newNode(t, nodeOpts{})
	n.configureQueue("r", `{"retryLimit":2}`)
	n.pushN("r", 1, 3)
	deliveries := 0
	var got []string
	for i := 0; i < 10; i++ {
		status, p := n.popHTTP("r", "", "batch", "10")
		if status == http.StatusNoContent {
			break
		}
		for _, m := range p.Messages {
			if m.TransactionID == "p0-1" {
				deliveries++
			}
		}
		res := n.ackAll(p, "", func(txid string) string {
			if txid == "p0-1" {
				return "failed"
			}
			return "completed"
		})
		for i, r := range res {
			if r.Success && p.Messages[i].TransactionID != "p0-1" {
				got = append(got, p.Messages[i].TransactionID)
			}
		}
	}
	if deliveries != 3 {
		t.Fatalf("p0-1 delivered %d times, want 1 + retryLimit", deliveries)
	}
	sort.Strings(got)
	if fmt.Sprint(got) != "[p0-0 p0-2 p0-2 p0-2]" {
		// p0-2 comes after the failed one: redelivered with it until it is dead-lettered.
		t.Fatalf("completed: %v", got)
	}
	code, out := n.get("/api/v1/dlq?queue=r")
	var dl struct {
		Messages []struct {
			TransactionID string          `json:"transactionId"`
			ErrorMessage  string          `json:"errorMessage"`
			RetryCount    int             `json:"retryCount"`
			Data          json.RawMessage `json:"data"`
			ConsumerGroup string          `json:"consumerGroup"`
		} `json:"messages"`
		Pagination struct{ Total int } `json:"pagination"`
	}
	if code != http.StatusOK || json.Unmarshal(out, &dl) != nil || dl.Pagination.Total != 1 || dl.Messages[0].TransactionID != "p0-1" ||
		dl.Messages[0].ErrorMessage != "handler failed" || string(dl.Messages[0].Data) != `{"n":1}` || dl.Messages[0].RetryCount != 2 {
		t.Fatalf("dlq: %d %s", code, out)
	}
}

// subscriptionMode=new starts at the current end; subscriptionFrom=now
// too; an RFC 3339 time in the past starts from there.
func TestConsumeSubscriptionModes(t *testing.T) {
	n := newNode(t, nodeOpts{})
	n.pushN("s", 1, 2)
	if status, _ := n.popHTTP("s", "", "consumerGroup", "fresh", "subscriptionMode", "new"); status != http.StatusNoContent {
		t.Fatalf("new: %d", status)
	}
	if status, _ := n.popHTTP("s", "", "consumerGroup", "now", "subscriptionFrom", "now"); status != http.StatusNoContent {
		t.Fatalf("from now: %d", status)
	}
	n.pushHTTP(items(item("s", "p0", "later")))
	for _, g := range []string{"fresh", "now"} {
		// A pop that may wait: the push is answered before it is announced
		// (discovery follows the answer), and an any-partition pop that found
		// the queue drained claims it again once the announcement lands.
		if _, p := n.popHTTP("s", "", "consumerGroup", g, "batch", "10", "wait", "true", "timeout", "30000"); len(p.Messages) != 1 || p.Messages[0].TransactionID != "later" {
			t.Fatalf("%s after a push: %+v", g, p)
		}
	}
	if _, p := n.popHTTP("s", "", "consumerGroup", "past", "batch", "10", "subscriptionFrom", "2000-01-01T00:00:00Z"); len(p.Messages) != 3 {
		t.Fatalf("from 2000: %+v", p)
	}
	if code, out := n.get("/api/v1/pop/queue/s?subscriptionFrom=yesterday"); code != http.StatusBadRequest || !strings.Contains(string(out), "subscriptionFrom") {
		t.Fatalf("bad subscriptionFrom: %d %s", code, out)
	}
}

// delayedProcessing holds young messages back; windowBuffer skips a
// partition whose newest message is young. Both listed as acted on.
func TestConsumeDelayedAndWindow(t *testing.T) {
	n := newNode(t, nodeOpts{})
	status, out := n.post("/api/v1/configure", []byte(`{"queue":"d","options":{"delayedProcessing":60,"priority":1}}`))
	if status != http.StatusOK || !strings.Contains(string(out), `"notActedOn":["priority"]`) {
		t.Fatalf("configure: %d %s", status, out)
	}
	n.configureQueue("w", `{"windowBuffer":60}`)
	n.pushN("d", 1, 1)
	n.pushN("w", 1, 1)
	for _, q := range []string{"d", "w"} {
		if status, _ := n.popHTTP(q, ""); status != http.StatusNoContent {
			t.Fatalf("%s while young: %d", q, status)
		}
	}
	if _, err := n.db.Pool().Exec(context.Background(), `UPDATE queen.log_segments SET created_at = created_at - interval '2 minutes'`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"d", "w"} {
		// The window's partition was found held back, not empty: a pop of
		// the partition itself finds it now.
		if status, p := n.popHTTP(q, "p0"); status != http.StatusOK || len(p.Messages) != 1 {
			t.Fatalf("%s once old enough: %d %+v", q, status, p)
		}
	}
}

// A long-poll pop parks without querying and is woken by a push on this
// bridge and by one on a peer bridge (its MESSAGE_AVAILABLE); with nothing
// pushed it answers 204 after the timeout.
func TestConsumeLongPoll(t *testing.T) {
	dsn := testenv.NewDatabase(t)
	prefix := "t" + randHex(4)
	a := newNode(t, nodeOpts{dsn: dsn, prefix: prefix})
	b := newNode(t, nodeOpts{dsn: dsn, prefix: prefix})
	if status, _ := a.popHTTP("lp", "", "wait", "true", "timeout", "50"); status != http.StatusNoContent {
		t.Fatalf("timeout: %d", status)
	}
	for _, via := range []*node{a, b} {
		done := make(chan popped, 1)
		claimsBefore := metricValue(t, a, "queen_consumer_claims_total")
		go func() {
			_, p := a.popHTTP("lp", "", "wait", "true", "timeout", "60000", "batch", "10")
			done <- p
		}()
		// Wait until the pop is parked, then push.
		for metricValue(t, a, "queen_parked_reads") < 1 {
			time.Sleep(time.Millisecond)
		}
		start := time.Now()
		via.pushHTTP(items(item("lp", "p0", "x-"+randHex(3))))
		p := <-done
		if len(p.Messages) != 1 {
			t.Fatalf("woken pop: %+v", p)
		}
		t.Logf("push via %s: the parked pop answered %v after the push", map[*node]string{a: "the same bridge", b: "a peer"}[via], time.Since(start))
		a.ackAll(p, "", nil)
		if claims := metricValue(t, a, "queen_consumer_claims_total") - claimsBefore; claims > 4 {
			t.Fatalf("the parked pop made %v claims", claims)
		}
	}
}

// The same operations over NATS: pop (queue and partition as fields), ack,
// lease; an empty pop answers an empty body.
func TestConsumeOverNATS(t *testing.T) {
	n := newNode(t, nodeOpts{})
	n.pushN("nq", 2, 2)
	req := func(subject string, body string) []byte {
		msg, err := n.nc.Request(n.prefix+".v1."+subject, []byte(body), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if e := msg.Header.Get("Nats-Service-Error"); e != "" {
			t.Fatalf("%s: %s", subject, e)
		}
		return msg.Data
	}
	var p popped
	if err := json.Unmarshal(req("pop", `{"queue":"nq","partition":"p1","batch":5}`), &p); err != nil || len(p.Messages) != 2 || p.Partition != "p1" {
		t.Fatalf("pop: %+v %v", p, err)
	}
	out := req("lease", fmt.Sprintf(`{"leaseId":%q,"seconds":30}`, p.LeaseID))
	if !strings.Contains(string(out), `"success":true`) {
		t.Fatalf("lease: %s", out)
	}
	body, _ := json.Marshal(map[string]any{"acknowledgments": []map[string]string{
		{"transactionId": p.Messages[0].TransactionID, "partitionId": p.PartitionID, "leaseId": p.LeaseID},
		{"transactionId": p.Messages[1].TransactionID, "partitionId": p.PartitionID, "leaseId": p.LeaseID},
	}})
	var res []ackAnswer
	if err := json.Unmarshal(req("ack", string(body)), &res); err != nil || !res[1].Success || !res[1].LeaseReleased {
		t.Fatalf("ack: %+v %v", res, err)
	}
	single := fmt.Sprintf(`{"transactionId":"nope","partitionId":%q}`, p.PartitionID)
	if err := json.Unmarshal(req("ack", single), &res); err != nil || res[0].Success {
		t.Fatalf("single ack of an unknown message: %+v %v", res, err)
	}
	if out := req("pop", `{"queue":"nq","partition":"p1"}`); len(out) != 0 {
		t.Fatalf("empty pop: %s", out)
	}
	msg, err := n.nc.Request(n.prefix+".v1.pop", []byte(`{"queue":""}`), 10*time.Second)
	if err != nil || msg.Header.Get("Nats-Service-Error-Code") != "400" {
		t.Fatalf("bad pop: %v %+v", err, msg)
	}
}

// A pop over NATS whose messages together pass what one NATS message
// carries answers what fits, and the rest comes with the next pops: every
// message is delivered once, in order.
func TestConsumeOverNATSBoundedByMaxPayload(t *testing.T) {
	n := newNode(t, nodeOpts{})
	big := strings.Repeat("x", 20<<10)
	for r := 0; r < 3; r++ {
		var items []string
		for i := 0; i < 20; i++ {
			items = append(items, fmt.Sprintf(`{"queue":"bq","partition":"p","transactionId":"m%02d","payload":{"s":%q}}`, r*20+i, big))
		}
		msg, err := n.nc.Request(n.prefix+".v1.push", []byte(`{"items":[`+strings.Join(items, ",")+`]}`), 30*time.Second)
		if err != nil || msg.Header.Get("Nats-Service-Error") != "" {
			t.Fatalf("push: %v %+v", err, msg)
		}
	}
	var got []string
	pops := 0
	for len(got) < 60 && pops < 10 {
		pops++
		msg, err := n.nc.Request(n.prefix+".v1.pop", []byte(`{"queue":"bq","partition":"p","batch":100}`), 30*time.Second)
		if err != nil {
			t.Fatalf("pop %d: %v", pops, err)
		}
		if len(msg.Data) > int(n.nc.MaxPayload()) || len(msg.Data) == 0 {
			t.Fatalf("pop %d answered %d bytes (max payload %d)", pops, len(msg.Data), n.nc.MaxPayload())
		}
		var p popped
		if err := json.Unmarshal(msg.Data, &p); err != nil {
			t.Fatal(err)
		}
		var acks []map[string]string
		for _, m := range p.Messages {
			got = append(got, m.TransactionID)
			acks = append(acks, map[string]string{"transactionId": m.TransactionID, "partitionId": p.PartitionID, "leaseId": p.LeaseID})
		}
		body, _ := json.Marshal(map[string]any{"acknowledgments": acks})
		var res []ackAnswer
		msg, err = n.nc.Request(n.prefix+".v1.ack", body, 30*time.Second)
		if err != nil || json.Unmarshal(msg.Data, &res) != nil || !res[len(res)-1].LeaseReleased {
			t.Fatalf("ack after pop %d: %v %s", pops, err, msg.Data)
		}
	}
	if pops < 2 || len(got) != 60 {
		t.Fatalf("%d pops delivered %d messages", pops, len(got))
	}
	for i, id := range got {
		if id != fmt.Sprintf("m%02d", i) {
			t.Fatalf("message %d is %s: %v", i, id, got)
		}
	}
}
