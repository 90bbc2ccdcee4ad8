package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
	"github.com/queenbridge/queenbridge/client"
	"github.com/queenbridge/queenbridge/embedded"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jetstream"
	"github.com/queenbridge/queenbridge/ownership"
)

// accountsNATS runs a nats-server with the repository's example accounts
// configuration (deploy/nats/accounts.conf).
func accountsNATS(t *testing.T) string {
	t.Helper()
	t.Setenv("QUEEN_NATS_BRIDGE_PASSWORD", "bridge-pw")
	t.Setenv("QUEEN_NATS_TENANT_A_PASSWORD", "a-pw")
	t.Setenv("QUEEN_NATS_TENANT_B_PASSWORD", "b-pw")
	ns, err := embedded.StartNATS(embedded.NATSConfig{Listen: "127.0.0.1:-1", ConfigFile: "../deploy/nats/accounts.conf"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Stop)
	return ns.ClientURL()
}

// tenantConn connects as a tenant user and collects its asynchronous errors
// (permission violations).
type tenantConn struct {
	*nats.Conn
	mu   sync.Mutex
	errs []string
}

func connectTenant(t *testing.T, url, user, password string) *tenantConn {
	t.Helper()
	tc := &tenantConn{}
	nc, err := nats.Connect(url, nats.UserInfo(user, password), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		tc.mu.Lock()
		tc.errs = append(tc.errs, err.Error())
		tc.mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	tc.Conn = nc
	return tc
}

// violation waits for a permissions violation naming subject.
func (tc *tenantConn) violation(t *testing.T, subject string) {
	t.Helper()
	waitUntil(t, "a permissions violation for "+subject, 10*time.Second, func() bool {
		tc.mu.Lock()
		defer tc.mu.Unlock()
		for _, e := range tc.errs {
			if strings.Contains(strings.ToLower(e), "permissions violation") && strings.Contains(e, subject) {
				return true
			}
		}
		return false
	})
}

// In the accounts mode a tenant account pushes, reads and configures its own
// queues only, cannot reach the control plane or the queue group, and sees
// no other account's replies.
func TestAccountsModeIsolatesTenants(t *testing.T) {
	url := accountsNATS(t)
	tenantA, tenantB := uuid.New(), uuid.New()
	n := newNode(t, nodeOpts{natsURL: url, prefix: "queen", natsOpts: []nats.Option{nats.UserInfo("bridge", "bridge-pw")},
		accounts: map[string]tenancy.TenantID{"TENANT_A": tenancy.TenantID(tenantA), "TENANT_B": tenancy.TenantID(tenantB)}})
	a := connectTenant(t, url, "tenant-a", "a-pw")
	b := connectTenant(t, url, "tenant-b", "b-pw")

	// A snoops on every inbox of its own account while B pushes.
	snoop, err := a.SubscribeSync("_INBOX.>")
	if err != nil {
		t.Fatal(err)
	}
	request := func(c *tenantConn, subject, body string) *nats.Msg {
		t.Helper()
		msg, err := c.Request(subject, []byte(body), 30*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", subject, err)
		}
		return msg
	}
	var rs []result
	if msg := request(a, "queen.v1.push", items(item("orders", "p", "a1"))); json.Unmarshal(msg.Data, &rs) != nil || len(rs) != 1 || rs[0].Status != "queued" {
		t.Fatalf("A's push: %s %v", msg.Data, msg.Header)
	}
	if msg := request(b, "queen.v1.push", items(item("orders", "p", "b1"), item("orders", "p", "b2"))); json.Unmarshal(msg.Data, &rs) != nil || len(rs) != 2 || rs[1].Status != "queued" {
		t.Fatalf("B's push: %s %v", msg.Data, msg.Header)
	}
	for _, c := range []struct {
		tenant uuid.UUID
		want   int64
	}{{tenantA, 1}, {tenantB, 2}} {
		got := n.count(`SELECT coalesce(sum(s.msg_count), 0) FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id
			JOIN queen.queues q ON q.id = p.queue_id WHERE q.tenant = $1 AND q.name = 'orders'`, c.tenant)
		if got != c.want {
			t.Fatalf("tenant %s holds %d messages, want %d", c.tenant, got, c.want)
		}
	}
	if c := n.count(`SELECT count(*) FROM queen.queues WHERE tenant = '00000000-0000-0000-0000-000000000000'`); c != 0 {
		t.Fatalf("%d queues under the default tenant", c)
	}
	// Reads see the account's own messages.
	msg := request(a, "queen.v1.fetch", `{"queue":"orders","partition":"p"}`)
	if !strings.Contains(string(msg.Data), `"transactionId":"a1"`) || strings.Contains(string(msg.Data), `"transactionId":"b1"`) {
		t.Fatalf("A's read: %s", msg.Data)
	}
	// Configure acts on the account's own queue.
	msg = request(b, "queen.v1.configure", `{"queue":"orders","options":{"dedupWindowSeconds":7}}`)
	if !strings.Contains(string(msg.Data), tenantB.String()) {
		t.Fatalf("B's configure: %s", msg.Data)
	}
	if w := n.count(`SELECT dedup_window_seconds FROM queen.queues WHERE tenant = $1 AND name = 'orders'`, tenantA); w == 7 {
		t.Fatal("B's configure changed A's queue")
	}
	// A's inboxes got A's own replies and none of B's.
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	own := 0
	for {
		m, err := snoop.NextMsg(200 * time.Millisecond)
		if err != nil {
			break
		}
		if strings.Contains(string(m.Data), `"b1"`) || strings.Contains(string(m.Data), tenantB.String()) {
			t.Fatalf("A received B's reply on %s: %s", m.Subject, m.Data)
		}
		own++
	}
	if own != 2 {
		t.Fatalf("A's snooping subscription saw %d of A's own 2 replies", own)
	}

	// The control plane, the forwarding and membership subjects and the
	// queue group are out of reach.
	forward := ownership.ForwardSubject("queen", n.br.ID())
	for _, subject := range []string{"queen.v1.maintenance.changed", "queen.v1.queue.changed", "queen.v1.available", "queen.v1.maintenance",
		"queen.v1.push.00000000-0000-0000-0000-000000000000", forward, "queen.v1.bridges"} {
		if err := a.Publish(subject, []byte(`{"enabled":true}`)); err != nil {
			t.Fatal(err)
		}
		a.violation(t, subject)
	}
	if _, err := a.QueueSubscribe("queen.v1.push", "queen-bridge", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	a.violation(t, "queen.v1.push")
	// Nor can a tenant receive (and so answer) forwards or heartbeats.
	for _, subject := range []string{"queen.v1.forward.>", "queen.v1.bridges"} {
		if _, err := a.Subscribe(subject, func(*nats.Msg) {}); err != nil {
			t.Fatal(err)
		}
		a.violation(t, subject)
	}
	// The bridge is untouched: pushes are still written, not spooled.
	if msg := request(b, "queen.v1.push", items(item("orders", "p", "b3"))); json.Unmarshal(msg.Data, &rs) != nil || rs[0].Status != "queued" {
		t.Fatalf("after the attempts: %s", msg.Data)
	}
}

// A request from the bridges' own account carries no account of a tenant:
// in the accounts mode it is refused, as is a subject that names a tenant.
func TestAccountsModeRefusesRequestsWithoutATenantAccount(t *testing.T) {
	url := accountsNATS(t)
	n := newNode(t, nodeOpts{natsURL: url, prefix: "queen", natsOpts: []nats.Option{nats.UserInfo("bridge", "bridge-pw")},
		accounts: map[string]tenancy.TenantID{"TENANT_A": tenancy.TenantID(uuid.New())}})
	msg := n.natsPush([]byte(items(item("q", "p", "x"))), "")
	if msg.Header.Get("Nats-Service-Error-Code") != "403" {
		t.Fatalf("push from the bridge account: %v %s", msg.Header, msg.Data)
	}
	// A forged request info from inside the bridge account names an account
	// that is not mapped: refused too.
	forged := nats.NewMsg("queen.v1.push")
	forged.Header.Set("Nats-Request-Info", `{"acc":"TENANT_C"}`)
	forged.Data = []byte(items(item("q", "p", "y")))
	reply, err := n.nc.RequestMsg(forged, 30*time.Second)
	if err != nil || reply.Header.Get("Nats-Service-Error-Code") != "403" {
		t.Fatalf("forged account: %v %v", err, reply)
	}
	if c := n.count(`SELECT count(*) FROM queen.queues`); c != 0 {
		t.Fatalf("%d queues created by refused requests", c)
	}
}

// JetStream publishes in the accounts mode (deploy/nats/accounts.conf's
// ORDERS and AUDIT): each tenant's land under its own tenant id, whatever
// the message says; a tenant cannot publish on a stream it does not import;
// a publish from inside the bridges' account, which names no tenant, is
// refused.
func TestAccountsModeJetStreamPublishesLandUnderTheirTenant(t *testing.T) {
	url := accountsNATS(t)
	tenantA, tenantB := uuid.New(), uuid.New()
	streams, err := jetstream.ParseStreams("ORDERS=orders.>,AUDIT=audit.>")
	if err != nil {
		t.Fatal(err)
	}
	n := newNode(t, nodeOpts{natsURL: url, prefix: "queen", natsOpts: []nats.Option{nats.UserInfo("bridge", "bridge-pw")},
		accounts: map[string]tenancy.TenantID{"TENANT_A": tenancy.TenantID(tenantA), "TENANT_B": tenancy.TenantID(tenantB)}, streams: streams})
	a := connectTenant(t, url, "tenant-a", "a-pw")
	b := connectTenant(t, url, "tenant-b", "b-pw")
	ctx := jsCtx(t)
	jsOf := func(c *nats.Conn) js.JetStream {
		j, err := js.New(c)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	// The same subject and Nats-Msg-Id from two tenants: two queues, each
	// message the first of its own.
	for _, c := range []struct {
		conn *tenantConn
		body string
	}{{a, `{"from":"a"}`}, {b, `{"from":"b"}`}} {
		ack, err := jsOf(c.conn.Conn).Publish(ctx, "orders.eu", []byte(c.body), js.WithMsgID("same-id"))
		if err != nil || ack.Stream != "ORDERS" || ack.Sequence != 1 || ack.Duplicate {
			t.Fatalf("%s: %+v %v", c.body, ack, err)
		}
	}
	// A request info header A writes itself is replaced by the server's.
	forged := nats.NewMsg("orders.eu")
	forged.Header.Set("Nats-Request-Info", `{"acc":"TENANT_B"}`)
	forged.Data = []byte(`{"from":"a, claiming b"}`)
	if ack, err := jsOf(a.Conn).PublishMsg(ctx, forged, js.WithMsgID("forged")); err != nil || ack.Sequence != 2 {
		t.Fatalf("forged: %+v %v", ack, err)
	}
	read := func(c *tenantConn) string {
		msg, err := c.Request("queen.v1.fetch", []byte(`{"queue":"ORDERS","partition":"eu"}`), 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return string(msg.Data)
	}
	if got := read(a); !strings.Contains(got, `{"from":"a"}`) || !strings.Contains(got, "claiming b") || strings.Contains(got, `{"from":"b"}`) {
		t.Fatalf("A reads %s", got)
	}
	if got := read(b); !strings.Contains(got, `{"from":"b"}`) || strings.Contains(got, `"from":"a`) {
		t.Fatalf("B reads %s", got)
	}
	held := func(tenant uuid.UUID, queue string) int64 {
		return n.count(`SELECT coalesce(sum(s.msg_count), 0) FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id
			JOIN queen.queues q ON q.id = p.queue_id WHERE q.tenant = $1 AND q.name = $2`, tenant, queue)
	}
	if ha, hb := held(tenantA, "ORDERS"), held(tenantB, "ORDERS"); ha != 2 || hb != 1 {
		t.Fatalf("ORDERS holds %d of A's and %d of B's", ha, hb)
	}
	// AUDIT is B's alone: A may not publish on it.
	if err := a.Publish("audit.login", []byte(`{"from":"a"}`)); err != nil {
		t.Fatal(err)
	}
	a.violation(t, "audit.login")
	if ack, err := jsOf(b.Conn).Publish(ctx, "audit.login", []byte(`{"from":"b"}`)); err != nil || ack.Stream != "AUDIT" || ack.Sequence != 1 {
		t.Fatalf("B on AUDIT: %+v %v", ack, err)
	}
	if ha, hb := held(tenantA, "AUDIT"), held(tenantB, "AUDIT"); ha != 0 || hb != 1 {
		t.Fatalf("AUDIT holds %d of A's and %d of B's", ha, hb)
	}
	// From the bridges' own account nothing names a tenant.
	_, err = jsOf(n.nc).Publish(ctx, "orders.eu", []byte(`{}`))
	var e *js.APIError
	if !errors.As(err, &e) || e.ErrorCode != 10039 {
		t.Fatalf("from the bridge account: %v", err)
	}
	if c := n.count(`SELECT count(*) FROM queen.queues WHERE tenant = '00000000-0000-0000-0000-000000000000'`); c != 0 {
		t.Fatalf("%d queues under the default tenant", c)
	}
}

// Partition-aware producers in the accounts mode: a tenant reads the owners'
// table (with its own tenant id, which the bucket hash takes), hears its
// announcements, and pushes on each bridge's own subject; its items land
// under its tenant with no forward. The new subjects reach neither the
// forwards nor the heartbeats: a tenant can publish only the table request
// and the bridges' own push subjects, and receive only the announcements.
func TestAccountsModePartitionAwareProducers(t *testing.T) {
	url := accountsNATS(t)
	tenantA := uuid.New()
	accounts := map[string]tenancy.TenantID{"TENANT_A": tenancy.TenantID(tenantA), "TENANT_B": tenancy.TenantID(uuid.New())}
	first := newNode(t, nodeOpts{natsURL: url, prefix: "queen", natsOpts: []nats.Option{nats.UserInfo("bridge", "bridge-pw")}, accounts: accounts})
	a := connectTenant(t, url, "tenant-a", "a-pw")
	changed, err := a.SubscribeSync(ownership.TableChangedSubject("queen"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	second := newNode(t, nodeOpts{natsURL: url, prefix: "queen", natsOpts: []nats.Option{nats.UserInfo("bridge", "bridge-pw")}, accounts: accounts,
		dsn: first.db.Pool().Config().ConnConfig.ConnString()})
	nodes := []*node{first, second}
	waitUntil(t, "both bridges to see two", 20*time.Second, func() bool {
		return metricValue(t, first, "queen_ownership_bridges") == 2 && metricValue(t, second, "queen_ownership_bridges") == 2
	})
	// The join is announced into the tenant's account.
	for {
		m, err := changed.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("no announcement of the two bridges' table reached the tenant: %v", err)
		}
		var tab ownership.OwnersTable
		if json.Unmarshal(m.Data, &tab) == nil && len(tab.Bridges) == 2 {
			if tab.Tenant != "" {
				t.Fatalf("an announcement names a tenant: %s", tab.Tenant)
			}
			break
		}
	}
	msg, err := a.Request(ownership.TableSubject("queen"), nil, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var tab ownership.OwnersTable
	if err := json.Unmarshal(msg.Data, &tab); err != nil || tab.Tenant != tenantA.String() || len(tab.Bridges) != 2 {
		t.Fatalf("the table as tenant A reads it: %s %v", msg.Data, err)
	}

	c, err := client.New(client.Config{NATS: a.Conn, Prefix: "queen", PartitionAware: true, OwnerTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var its []client.Item
	for i := 0; i < 40; i++ {
		its = append(its, client.Item{Queue: "orders", Partition: fmt.Sprintf("p%d", i), TransactionID: fmt.Sprintf("a%d", i), Payload: json.RawMessage(`{}`)})
	}
	rs, err := c.Push(context.Background(), its...)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		if r.Status != client.Queued || r.Partition != its[i].Partition {
			t.Fatalf("item %d: %+v", i, r)
		}
	}
	if st := c.Stats(); st.OwnerParts != 2 || st.Fallbacks != 0 {
		t.Fatalf("client %+v: want one part per bridge, no fallback", st)
	}
	for i, n := range nodes {
		if f := metricValue(t, n, "queen_forward_groups_total"); f != 0 {
			t.Fatalf("bridge %d forwarded %v groups of a partition-aware tenant", i, f)
		}
	}
	if got := first.count(`SELECT coalesce(sum(s.msg_count), 0) FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id
			JOIN queen.queues q ON q.id = p.queue_id WHERE q.tenant = $1 AND q.name = 'orders'`, tenantA); got != 40 {
		t.Fatalf("tenant A holds %d messages, want 40", got)
	}
	if c := first.count(`SELECT count(*) FROM queen.queues WHERE tenant <> $1`, tenantA); c != 0 {
		t.Fatalf("%d queues under another tenant", c)
	}

	// Out of reach: the forwards and heartbeats, a tenant named after a
	// bridge's own subject, forging announcements, serving a bridge's own
	// subject.
	own := ownership.PushSubject("queen", first.br.ID())
	for _, subject := range []string{ownership.ForwardSubject("queen", first.br.ID()), "queen.v1.bridges", own + "." + uuid.NewString(),
		ownership.TableChangedSubject("queen")} {
		if err := a.Publish(subject, []byte(`x`)); err != nil {
			t.Fatal(err)
		}
		a.violation(t, subject)
	}
	for _, subject := range []string{"queen.v1.owner.*", "queen.v1.forward.>", "queen.v1.owners"} {
		if _, err := a.Subscribe(subject, func(*nats.Msg) {}); err != nil {
			t.Fatal(err)
		}
		a.violation(t, subject)
	}
	if f := metricValue(t, first, "queen_forward_received_groups_total") + metricValue(t, second, "queen_forward_received_groups_total"); f != 0 {
		t.Fatalf("the bridges received %v forwarded groups", f)
	}
}

// In the accounts mode the consumer subjects are imported like push: a
// tenant pops, extends and acknowledges its own queue's messages, and
// another tenant's pop of a queue of the same name finds nothing.
func TestAccountsModeConsumers(t *testing.T) {
	url := accountsNATS(t)
	tenantA, tenantB := uuid.New(), uuid.New()
	newNode(t, nodeOpts{natsURL: url, prefix: "queen", natsOpts: []nats.Option{nats.UserInfo("bridge", "bridge-pw")},
		accounts: map[string]tenancy.TenantID{"TENANT_A": tenancy.TenantID(tenantA), "TENANT_B": tenancy.TenantID(tenantB)}})
	a := connectTenant(t, url, "tenant-a", "a-pw")
	b := connectTenant(t, url, "tenant-b", "b-pw")
	request := func(c *tenantConn, subject, body string) []byte {
		t.Helper()
		msg, err := c.Request(subject, []byte(body), 30*time.Second)
		if err != nil {
			t.Fatalf("%s: %v", subject, err)
		}
		if e := msg.Header.Get("Nats-Service-Error"); e != "" {
			t.Fatalf("%s: %s", subject, e)
		}
		return msg.Data
	}
	request(a, "queen.v1.push", items(item("jobs", "p", "a1")))
	if out := request(b, "queen.v1.pop", `{"queue":"jobs"}`); len(out) != 0 {
		t.Fatalf("B popped A's message: %s", out)
	}
	var p popped
	if err := json.Unmarshal(request(a, "queen.v1.pop", `{"queue":"jobs","batch":5}`), &p); err != nil || len(p.Messages) != 1 || p.Messages[0].TransactionID != "a1" {
		t.Fatalf("A's pop: %+v %v", p, err)
	}
	// B cannot extend or acknowledge A's lease and message.
	if out := request(b, "queen.v1.lease", `{"leaseId":"`+p.LeaseID+`"}`); !strings.Contains(string(out), `"success":false`) {
		t.Fatalf("B extended A's lease: %s", out)
	}
	ack := `{"transactionId":"a1","partitionId":"` + p.PartitionID + `","leaseId":"` + p.LeaseID + `"}`
	if out := request(b, "queen.v1.ack", ack); !strings.Contains(string(out), `"success":false`) {
		t.Fatalf("B acknowledged A's message: %s", out)
	}
	if out := request(a, "queen.v1.lease", `{"leaseId":"`+p.LeaseID+`","seconds":30}`); !strings.Contains(string(out), `"success":true`) {
		t.Fatalf("A's extension: %s", out)
	}
	if out := request(a, "queen.v1.ack", ack); !strings.Contains(string(out), `"success":true`) || !strings.Contains(string(out), `"leaseReleased":true`) {
		t.Fatalf("A's ack: %s", out)
	}
	if out := request(a, "queen.v1.dlq", `{"queue":"jobs"}`); !strings.Contains(string(out), `"total":0`) {
		t.Fatalf("A's dead letters: %s", out)
	}
	// A pop's cancel is its tenant's: B's cancel of A's request id reaches
	// nothing (no bridge answers), A's hands the claim back.
	request(a, "queen.v1.push", items(item("jobs", "p", "a2")))
	if out := request(a, "queen.v1.pop", `{"queue":"jobs","requestId":"pop-a"}`); !strings.Contains(string(out), `"a2"`) {
		t.Fatalf("A's pop: %s", out)
	}
	if msg, err := b.Request("queen.v1.pop.cancel", []byte(`{"requestId":"pop-a"}`), 500*time.Millisecond); err == nil {
		t.Fatalf("B's cancel of A's pop was answered: %s", msg.Data)
	}
	if out := request(a, "queen.v1.pop.cancel", `{"requestId":"pop-a"}`); string(out) != `{"cancelled":true}` {
		t.Fatalf("A's cancel: %s", out)
	}
	if out := request(a, "queen.v1.pop", `{"queue":"jobs"}`); !strings.Contains(string(out), `"a2"`) {
		t.Fatalf("A's pop after the cancel: %s", out)
	}
}
