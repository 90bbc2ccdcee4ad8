package jetstream

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/auth"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// A pull request reaches the engine with its reply as the inbox; one the
// bridge cannot serve is answered with a 400 status, one for a consumer
// or stream that does not exist with a 503, and neither reaches the
// engine.
func TestPullRequestsReachTheEngineOrAreAnswered(t *testing.T) {
	h := newHarness(t, nil)
	if e := apiAnswer(t, h.request(t, "CONSUMER.CREATE.ORDERS.workers", createBody(`{"durable_name":"workers","ack_policy":"explicit"}`))); e != nil {
		t.Fatal(e)
	}
	send := func(api, body string) string {
		inbox := nats.NewInbox()
		if err := h.nc.PublishRequest(h.prefix+api, inbox, []byte(body)); err != nil {
			t.Fatal(err)
		}
		return inbox
	}
	fetch := send("CONSUMER.MSG.NEXT.ORDERS.workers", `{"expires":2000000000,"batch":3}`)
	legacy := send("CONSUMER.MSG.NEXT.ORDERS.workers", "")
	tooLarge := send("CONSUMER.MSG.NEXT.ORDERS.workers", `{"expires":1000000000,"batch":1,"idle_heartbeat":800000000}`)
	group := send("CONSUMER.MSG.NEXT.ORDERS.workers", `{"batch":1,"group":"jobs"}`)
	nobody := send("CONSUMER.MSG.NEXT.ORDERS.nobody", `{"batch":1}`)
	noStream := send("CONSUMER.MSG.NEXT.NOPE.workers", `{"batch":1}`)
	if err := h.nc.Publish(h.prefix+"CONSUMER.MSG.NEXT.ORDERS.workers", []byte(`{"batch":1}`)); err != nil { // no reply: dropped
		t.Fatal(err)
	}

	want := map[string]string{
		tooLarge: "NATS/1.0 400 Bad Request - heartbeat value too large\r\n\r\n",
		group:    "NATS/1.0 400 Bad Request - Invalid Priority Group\r\n\r\n",
		nobody:   "NATS/1.0 503\r\n\r\n",
		noStream: "NATS/1.0 503\r\n\r\n",
	}
	testkit.WaitFor(t, "the pulls and the statuses", 10*time.Second, func() bool {
		pulls, _ := h.engine.recorded()
		n := 0
		for inbox := range want {
			n += len(h.status.to(inbox))
		}
		return len(pulls) == 2 && n == len(want) && h.api.Stats().Unanswerable == 1
	})
	for inbox, w := range want {
		if got := h.status.to(inbox); len(got) != 1 || got[0] != w {
			t.Errorf("statuses to %s: %q, want %q", inbox, got, w)
		}
	}
	pulls, _ := h.engine.recorded()
	byInbox := map[string]fakePull{}
	for _, p := range pulls {
		byInbox[p.inbox] = p
	}
	if p := byInbox[fetch]; p.stream != "ORDERS" || p.name != "workers" || p.req != (PullRequest{Batch: 3, Expires: 2 * time.Second}) {
		t.Errorf("Fetch's pull: %+v", p)
	}
	if p := byInbox[legacy]; p.req != (PullRequest{Batch: 1}) {
		t.Errorf("an empty pull: %+v", p)
	}
	if s := h.api.Stats(); s.Pulls != 6 || s.PullsRefused != 4 {
		t.Errorf("stats: %+v", s)
	}
}

// Acknowledgements reach the engine parsed, with the reply of a DoubleAck;
// +NXT is applied as an ack and its pull refused; a body that is no ack is
// answered with a 400 and not applied; an ack subject that is not this
// bridge's is left alone. The same with the acks on a connection of
// their own (AckConnection), where the API's connection has no ack
// subscription.
func TestAcksReachTheEngine(t *testing.T) {
	for _, own := range []bool{false, true} {
		t.Run(fmt.Sprintf("AckConnection=%v", own), func(t *testing.T) {
			h := newHarnessWith(t, nil, func(c *APIConfig) { c.AckConnection = own })
			if want := map[bool]int{false: 2, true: 1}[own]; h.server.NumSubscriptions() != want {
				t.Fatalf("the API's connection holds %d subscriptions, want %d", h.server.NumSubscriptions(), want)
			}
			acksReachTheEngine(t, h)
			if own {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				h.stopped = true
				if err := h.api.Stop(ctx); err != nil {
					t.Fatal(err)
				}
				if !h.api.ackNC.IsClosed() {
					t.Fatal("Stop left the acks' connection open")
				}
			}
		})
	}
}

func acksReachTheEngine(t *testing.T, h *harness) {
	ref := AckRef{PartitionID: 7, Stream: "ORDERS", Consumer: "workers", Delivered: 1, Offset: 105, ConsumerSeq: 9, Timestamp: 1764669600123456789, Pending: 12, Epoch: 3}
	subject := string(AppendAckSubject(nil, ref))
	publish := func(body, reply string) {
		if err := h.nc.PublishMsg(&nats.Msg{Subject: subject, Reply: reply, Data: []byte(body)}); err != nil {
			t.Fatal(err)
		}
	}
	publish("+ACK", "")
	publish("", "_INBOX.double")
	publish(`-NAK {"delay":300000000}`, "")
	publish("+WPI", "")
	publish("+TERM poison", "")
	publish("+NXT 1", "_INBOX.next")
	publish("+WHAT", "_INBOX.what")
	if err := h.nc.Publish("$JS.ACK.ORDERS.workers.1.105.9.1764669600123456789.12", []byte("+ACK")); err != nil { // nats-server's own shape
		t.Fatal(err)
	}
	other := ref
	other.Stream = "NOPE"
	if err := h.nc.Publish(string(AppendAckSubject(nil, other)), []byte("+ACK")); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the acks", 10*time.Second, func() bool {
		_, acks := h.engine.recorded()
		s := h.api.Stats()
		return len(acks) == 6 && s.AcksForeign == 2 && s.AcksRefused == 1 && len(h.status.to("_INBOX.what")) == 1
	})
	_, acks := h.engine.recorded()
	want := []fakeAck{
		{ref: ref, kind: AckAck},
		{ref: ref, kind: AckAck, reply: "_INBOX.double"},
		{ref: ref, kind: AckNak, delay: 300 * time.Millisecond},
		{ref: ref, kind: AckProgress},
		{ref: ref, kind: AckTerm, reason: "poison"},
		{ref: ref, kind: AckAck}, // +NXT: the ack, without the reply
	}
	for i, w := range want {
		if acks[i] != w {
			t.Errorf("ack %d: %+v, want %+v", i, acks[i], w)
		}
	}
	if got := h.status.to("_INBOX.next"); len(got) != 1 || got[0] != "NATS/1.0 400 Bad Request - "+ErrAckNext.Error()+"\r\n\r\n" {
		t.Errorf("+NXT's reply: %q", got)
	}
	if got := h.status.to("_INBOX.what"); got[0] != `NATS/1.0 400 Bad Request - jetstream: unknown acknowledgement: "+WHAT"`+"\r\n\r\n" {
		t.Errorf("an unknown body's reply: %q", got)
	}
}

// In the accounts mode each request is its account's tenant's: a tenant
// sees and reaches only its own consumers, and a request from no tenant
// account is refused.
func TestAccountsSeparateTenants(t *testing.T) {
	tenantA, tenantB := tenancy.TenantID{1}, tenancy.TenantID{2}
	h := newHarness(t, auth.NewAccounts(map[string]tenancy.TenantID{"A": tenantA, "B": tenantB}))
	as := func(account, api, body string) []byte {
		t.Helper()
		m := nats.NewMsg(h.prefix + api)
		m.Data = []byte(body)
		if account != "" {
			m.Header.Set(auth.RequestInfoHeader, fmt.Sprintf(`{"acc":%q}`, account))
		}
		r, err := h.nc.RequestMsg(m, 10*time.Second)
		if err != nil {
			t.Fatalf("%s as %s: %v", api, account, err)
		}
		return r.Data
	}
	if e := apiAnswer(t, as("A", "CONSUMER.CREATE.ORDERS.mine", createBody(`{"durable_name":"mine","ack_policy":"explicit"}`))); e != nil {
		t.Fatal(e)
	}
	var names consumerNamesResponse
	for account, want := range map[string]int{"A": 1, "B": 0} {
		if err := json.Unmarshal(as(account, "CONSUMER.NAMES.ORDERS", ""), &names); err != nil || names.Total != want || len(names.Consumers) != want {
			t.Errorf("names as %s: %+v, %v; want %d", account, names, err, want)
		}
	}
	if e := apiAnswer(t, as("B", "CONSUMER.INFO.ORDERS.mine", "")); e == nil || e.ErrCode != 10014 {
		t.Errorf("B reads A's consumer: %+v", e)
	}
	if e := apiAnswer(t, as("B", "CONSUMER.DELETE.ORDERS.mine", "")); e == nil || e.ErrCode != 10014 {
		t.Errorf("B deletes A's consumer: %+v", e)
	}
	for _, account := range []string{"", "C"} {
		e := apiAnswer(t, as(account, "STREAM.INFO.ORDERS", ""))
		if e == nil || e.Code != 503 || e.ErrCode != 10039 {
			t.Errorf("a request from account %q: %+v, want 503/10039", account, e)
		}
	}

	// Pulls and acks are the tenant's too.
	inboxA, inboxB := nats.NewInbox(), nats.NewInbox()
	for account, inbox := range map[string]string{"A": inboxA, "B": inboxB} {
		m := nats.NewMsg(h.prefix + "CONSUMER.MSG.NEXT.ORDERS.mine")
		m.Reply = inbox
		m.Header.Set(auth.RequestInfoHeader, fmt.Sprintf(`{"acc":%q}`, account))
		if err := h.nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	ack := nats.NewMsg(string(AppendAckSubject(nil, AckRef{PartitionID: 1, Stream: "ORDERS", Consumer: "mine"})))
	ack.Header.Set(auth.RequestInfoHeader, `{"acc":"B"}`)
	if err := h.nc.PublishMsg(ack); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "A's pull, B's 503 and B's ack", 10*time.Second, func() bool {
		pulls, acks := h.engine.recorded()
		return len(pulls) == 1 && len(h.status.to(inboxB)) == 1 && len(acks) == 1
	})
	pulls, acks := h.engine.recorded()
	if pulls[0].tenant != tenantA || pulls[0].inbox != inboxA || acks[0].tenant != tenantB {
		t.Errorf("pull %+v, ack %+v", pulls[0], acks[0])
	}
	// B's 503 goes over B's leaf connection: its inbox is in B's account.
	if got := h.status.tenants(inboxB); len(got) != 1 || got[0] != tenantB {
		t.Errorf("B's 503 went over the connections of %v", got)
	}
}
