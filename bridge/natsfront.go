package bridge

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/queenbridge/queenbridge/auth"
	"github.com/queenbridge/queenbridge/internal/httpserve"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/ownership"
	"github.com/queenbridge/queenbridge/push"
)

// Version is reported by the micro service.
const Version = "0.1.0"

// ServiceName is the micro service name and its queue group.
const ServiceName = "queen-bridge"

func (b *Bridge) startNATS() error {
	svc, err := micro.AddService(b.cfg.NATS, micro.Config{
		Name: ServiceName, Version: Version, QueueGroup: ServiceName,
		Description: "queenbridge push endpoint: fused PostgreSQL writes for a partitioned log",
	})
	if err != nil {
		return err
	}
	b.svc = svc
	pfx := b.cfg.Prefix + ".v1."
	for _, ep := range []struct {
		name, subject string
		h             micro.HandlerFunc
	}{
		{"push", pfx + "push", b.natsPush},
		{"push-tenant", pfx + "push.*", b.natsPush},
		// This bridge's own push subject, for producers that know which
		// bridge owns their partitions (docs/ownership.md); the push is
		// handled as any other, ownership checked and all.
		{"push-owner", b.ownSubject, b.natsPush},
		{"push-owner-tenant", b.ownSubject + ".*", b.natsPush},
		{"owners", ownership.TableSubject(b.cfg.Prefix), b.natsOwners},
		{"configure", pfx + "configure", b.natsConfigure},
		{"maintenance", pfx + "maintenance", b.natsMaintenance},
		{"fetch", pfx + "fetch", b.natsFetch},
		{"pop", pfx + "pop", b.natsPop},
		{"pop-cancel", pfx + "pop.cancel", b.natsPopCancel},
		{"ack", pfx + "ack", b.natsAck},
		{"lease", pfx + "lease", b.natsLease},
		{"dlq", pfx + "dlq", b.natsDLQ},
		{"transaction", pfx + "transaction", b.natsTransaction},
		{"transaction-tenant", pfx + "transaction.*", b.natsTransaction},
		{"streams-queries", pfx + "streams.queries", b.natsStreams(pfx+"streams.queries", b.streamQuery)},
		{"streams-queries-tenant", pfx + "streams.queries.*", b.natsStreams(pfx+"streams.queries", b.streamQuery)},
		{"streams-state", pfx + "streams.state.get", b.natsStreams(pfx+"streams.state.get", b.streamState)},
		{"streams-state-tenant", pfx + "streams.state.get.*", b.natsStreams(pfx+"streams.state.get", b.streamState)},
		{"streams-cycle", pfx + "streams.cycle", b.natsStreams(pfx+"streams.cycle", b.streamCycle)},
		{"streams-cycle-tenant", pfx + "streams.cycle.*", b.natsStreams(pfx+"streams.cycle", b.streamCycle)},
	} {
		opts := []micro.EndpointOpt{micro.WithEndpointSubject(ep.subject)}
		if ep.name == "pop-cancel" { // every bridge hears it: the pop went to one of them
			opts = append(opts, micro.WithEndpointQueueGroupDisabled())
		}
		if err := svc.AddEndpoint(ep.name, ep.h, opts...); err != nil {
			return err
		}
	}
	return nil
}

// inlinePushBytes: NATS push bodies up to this size are decoded on the
// subscription's delivery goroutine (a few µs), and when every queue they
// name has fresh cached settings they are also prepared and submitted there,
// which never waits. Anything that may wait (a settings look-up in the
// database, a large body) goes to the worker pool as before. This spares
// the common request one goroutine hand-off (docs/request-path.md).
const inlinePushBytes = 64 << 10

// natsPush runs on the subscription's delivery goroutine; the answer is sent
// from whichever goroutine settles the last verdict.
func (b *Bridge) natsPush(req micro.Request) {
	tenant, ok := b.natsBounded(req, b.pushBase(req.Subject()))
	if !ok {
		return
	}
	size := int64(len(req.Data()))
	answer := func(status int, body []byte) {
		respondNATS(b.cfg.NATS, req, status, body)
		b.budget.Give(size)
		b.gate.Done()
	}
	if !b.budget.TryTake(size) {
		// The delivery goroutine does not wait: a worker waits briefly for
		// room, then answers 503.
		b.enqueue(req, func() {
			if !b.budget.Take(context.Background(), size, b.cfg.BudgetWait) {
				respondNATS(b.cfg.NATS, req, http.StatusServiceUnavailable, jsonapi.AppendError(nil, httpserve.ErrBusy.Error()))
				b.gate.Done()
				return
			}
			b.pushBody(context.Background(), "nats", tenant, req.Data(), answer)
		})
		return
	}
	if !b.natsPushTaken(req, tenant, answer) {
		b.budget.Give(size) // refused while stopping: answer never runs
	}
}

// natsPushTaken runs or queues a push whose bytes are taken; false when the
// bridge is stopping and refused it.
func (b *Bridge) natsPushTaken(req micro.Request, tenant tenancy.TenantID, answer func(int, []byte)) bool {
	if len(req.Data()) > inlinePushBytes {
		return b.enqueue(req, func() { b.pushBody(context.Background(), "nats", tenant, req.Data(), answer) })
	}
	items, err := jsonapi.DecodePush(req.Data())
	if err != nil { // answered here: nothing to wait for
		return b.inline(req, func() { answer(b.badPush("nats", err)) })
	}
	run := func() { b.pusher.Push(context.Background(), "nats", tenant, items, push.Answer{Body: answer}) }
	if b.queues.AllFresh(tenant, len(items), func(i int) string { return items[i].Queue }) {
		return b.inline(req, run)
	}
	return b.enqueue(req, run)
}

// natsOwners answers the owners' table (ownership.OwnersTable); in the
// accounts mode with the requester's tenant, which the bucket hash takes.
func (b *Bridge) natsOwners(req micro.Request) {
	tab := b.router.TableJSON()
	if b.accounts.Enabled() {
		tenant, status, err := b.natsTenant(req, "")
		if err != nil {
			respondNATS(b.cfg.NATS, req, status, jsonapi.AppendError(nil, err.Error()))
			return
		}
		tab = jsonapi.AppendOwnersWithTenant(nil, tab, tenant)
	}
	respondNATS(b.cfg.NATS, req, http.StatusOK, tab)
}

// enqueue hands fn to the worker pool unless the bridge is stopping (then
// it answers 503 itself and reports false); the gate counts the call.
func (b *Bridge) enqueue(req micro.Request, fn func()) bool {
	if !b.gate.Go(fn) {
		respondNATS(b.cfg.NATS, req, http.StatusServiceUnavailable, jsonapi.AppendError(nil, push.ErrStopping))
		return false
	}
	return true
}

// inline runs fn here unless the bridge is stopping (then it answers 503
// itself and reports false); the gate counts the call.
func (b *Bridge) inline(req micro.Request, fn func()) bool {
	if !b.gate.Admit() {
		respondNATS(b.cfg.NATS, req, http.StatusServiceUnavailable, jsonapi.AppendError(nil, push.ErrStopping))
		return false
	}
	fn()
	return true
}

// natsTenant is the tenant a NATS request acts for. In the accounts mode
// it is the requester's account, which nats-server names in the request
// info of a request that came through a service import (403 when there is
// none, or the account is not mapped); the request must then come on base
// itself, a tenant in the subject refused. In the single-account mode every
// client is trusted: a subject under base (a push's, a transaction's) may
// name the tenant (auth.SubjectTenant); with base "" the request acts for
// the default tenant.
func (b *Bridge) natsTenant(req micro.Request, base string) (tenancy.TenantID, int, error) {
	if !b.accounts.Enabled() {
		if base == "" {
			return tenancy.TenantID{}, 0, nil
		}
		t, err := auth.SubjectTenant(req.Subject(), base)
		return t, http.StatusBadRequest, err
	}
	t, err := b.accounts.TenantOf(req.Headers().Get(auth.RequestInfoHeader))
	if err != nil {
		return t, http.StatusForbidden, err
	}
	if base != "" && req.Subject() != base {
		return t, http.StatusBadRequest, jsonapi.Badf("subject %q: in the accounts mode the tenant is the NATS account's; send on %s", req.Subject(), base)
	}
	return t, 0, nil
}

// natsBounded is natsTenant for a request MaxBodyBytes bounds (a push, a
// transaction); false: it was refused, and answered.
func (b *Bridge) natsBounded(req micro.Request, base string) (tenancy.TenantID, bool) {
	tenant, status, err := b.natsTenant(req, base)
	if err == nil && int64(len(req.Data())) > b.cfg.MaxBodyBytes {
		status, err = http.StatusRequestEntityTooLarge, jsonapi.Badf("body larger than %d bytes", b.cfg.MaxBodyBytes)
	}
	if err != nil {
		respondNATS(b.cfg.NATS, req, status, jsonapi.AppendError(nil, err.Error()))
	}
	return tenant, err == nil
}

// pushBase is the subject a push came under: this bridge's own push
// subject, or <prefix>.v1.push.
func (b *Bridge) pushBase(subject string) string {
	if strings.HasPrefix(subject, b.ownSubject) {
		return b.ownSubject
	}
	return b.cfg.Prefix + ".v1.push"
}

// respondNATS answers with the body; request-level errors (4xx, 503) carry
// the micro error headers. Answers usually leave long after the micro
// handler returned (from the goroutine that settled the last verdict), and
// micro.Request's own Respond/Error record state that micro reads when the
// handler returns; so the reply is published directly on the connection.
func respondNATS(nc *nats.Conn, req micro.Request, status int, body []byte) {
	if req.Reply() == "" {
		return
	}
	msg := &nats.Msg{Subject: req.Reply(), Data: body}
	if status != http.StatusCreated && status != http.StatusOK && status != http.StatusInternalServerError {
		desc := string(body)
		if m := jsonapi.DecodeError(body); m != "" {
			desc = m
		}
		msg.Header = nats.Header{micro.ErrorCodeHeader: []string{strconv.Itoa(status)}, micro.ErrorHeader: []string{desc}}
	}
	_ = nc.PublishMsg(msg)
}
