package jetstream

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
)

// createConsumer answers CONSUMER.CREATE.<stream>[.<name>[.<filter>]]
// and, legacy, CONSUMER.DURABLE.CREATE.<stream>.<name>, checking the
// request against its subject in nats-server's order.
func (a *API) createConsumer(ctx context.Context, r request, stream, name, filter string, legacyDurable bool) any {
	resp := consumerInfoResponse{apiResponse: apiResponse{Type: typeConsumerCreate}}
	fail := func(e *apiError) any { resp.Error = e; return resp }
	var req consumerCreateRequest
	dec := json.NewDecoder(bytes.NewReader(r.msg.Data))
	dec.DisallowUnknownFields() // a field the bridge does not know is one it would ignore
	if err := dec.Decode(&req); err != nil {
		return fail(errInvalidJSON(err))
	}
	if stream != req.Stream {
		return fail(errStreamMismatch)
	}
	if strings.ContainsAny(name, `\/`) {
		return fail(errPathSeparators)
	}
	if req.Config == nil {
		return fail(errConfigRequired)
	}
	cfg := req.Config
	switch {
	case legacyDurable:
		if cfg.Durable == "" {
			return fail(errDurableNotSet)
		}
		if name != cfg.Durable {
			return fail(errDurableMismatch)
		}
		cfg.Name = name
	case name != "":
		if cfg.Durable != "" && name != cfg.Durable {
			return fail(errDurableMismatch)
		}
		cfg.Name = name
	default: // legacy ephemeral: the name is the request's, or made here
		if cfg.Durable != "" {
			return fail(errEphemeralDurable)
		}
		if cfg.Name == "" {
			cfg.Name = ephemeralName()
		}
	}
	if filter != "" && len(cfg.FilterSubjects) != 0 {
		return fail(errMultipleFilters)
	}
	if filter != "" && cfg.FilterSubject != filter {
		return fail(errFilterMismatch)
	}
	s := a.streams[stream]
	if s == nil {
		return fail(errStreamNotFound)
	}
	switch req.Action {
	case "", "create", "update":
	default:
		return fail(errInvalidJSON(fmt.Errorf("unknown consumer action: %q", req.Action)))
	}
	c, bad := consumerConfig(cfg, s, a.cfg.Now())
	if bad != nil {
		return fail(bad)
	}
	info, err := a.cfg.Engine.CreateConsumer(ctx, r.tenant, stream, c, req.Action)
	if err != nil {
		return fail(engineError(err))
	}
	resp.consumerInfoJSON = infoJSON(info)
	return resp
}

// ephemeralName names an ephemeral consumer whose request names none, as
// nats-server does: eight random letters and digits.
func ephemeralName() string {
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	for i := range b {
		b[i] = digits[int(b[i])%len(digits)]
	}
	return string(b[:])
}

// emptyRequest is nats-server's isEmptyRequest: no body, or an empty
// JSON object.
func emptyRequest(data []byte) bool {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return true
	}
	var m map[string]any
	return json.Unmarshal(data, &m) == nil && len(m) == 0
}

// checkConsumerRequest checks what CONSUMER.INFO and CONSUMER.DELETE
// share: no body (as nats-server wants), a declared stream.
func (a *API) checkConsumerRequest(r request, stream string) *apiError {
	switch {
	case !emptyRequest(r.msg.Data):
		return errNotEmptyRequest
	case a.streams[stream] == nil:
		return errStreamNotFound
	}
	return nil
}

// consumerInfo answers CONSUMER.INFO.<stream>.<name>.
func (a *API) consumerInfo(ctx context.Context, r request, stream, name string) any {
	resp := consumerInfoResponse{apiResponse: apiResponse{Type: typeConsumerInfo}}
	if resp.Error = a.checkConsumerRequest(r, stream); resp.Error == nil {
		info, err := a.cfg.Engine.ConsumerInfo(ctx, r.tenant, stream, name)
		if err != nil {
			resp.Error = engineError(err)
		} else {
			resp.consumerInfoJSON = infoJSON(info)
		}
	}
	return resp
}

// deleteConsumer answers CONSUMER.DELETE.<stream>.<name>.
func (a *API) deleteConsumer(ctx context.Context, r request, stream, name string) any {
	resp := consumerDeleteResponse{apiResponse: apiResponse{Type: typeConsumerDelete}}
	if resp.Error = a.checkConsumerRequest(r, stream); resp.Error == nil {
		if err := a.cfg.Engine.DeleteConsumer(ctx, r.tenant, stream, name); err != nil {
			resp.Error = engineError(err)
		} else {
			resp.Success = true
		}
	}
	return resp
}

// consumerList answers CONSUMER.NAMES.<stream> and CONSUMER.LIST.<stream>:
// the tenant's consumers of the stream, by name.
func (a *API) consumerList(ctx context.Context, r request, stream string, names bool) any {
	typ, limit := typeConsumerList, listLimit
	if names {
		typ, limit = typeConsumerNames, namesLimit
	}
	req, bad := pagedRequest(r.msg.Data)
	if bad == nil && a.streams[stream] == nil {
		bad = errStreamNotFound
	}
	var all []ConsumerInfo
	if bad == nil {
		var err error
		if all, err = a.cfg.Engine.Consumers(ctx, r.tenant, stream); err != nil {
			bad = engineError(err)
		}
	}
	if bad != nil {
		return apiResponse{Type: typ, Error: bad}
	}
	from, to := page(len(all), req.Offset, limit)
	paged := apiPaged{Total: len(all), Offset: req.Offset, Limit: limit}
	if names {
		resp := consumerNamesResponse{apiResponse: apiResponse{Type: typ}, apiPaged: paged, Consumers: []string{}}
		for _, c := range all[from:to] {
			resp.Consumers = append(resp.Consumers, c.Name)
		}
		return resp
	}
	resp := consumerListResponse{apiResponse: apiResponse{Type: typ}, apiPaged: paged, Consumers: []*consumerInfoJSON{}}
	for _, c := range all[from:to] {
		resp.Consumers = append(resp.Consumers, infoJSON(c))
	}
	return resp
}

// consumerRefusal answers the consumer subjects the bridge does not serve
// (pause, unpin, reset, leader stepdown): what they act on (priority
// groups, pausing, a raft leader, moving the ack floor) has no meaning for
// a consumer on the bridge.
func (a *API) consumerRefusal(t []string) any {
	if len(t) >= 3 && a.streams[t[2]] == nil {
		return apiResponse{Type: typeError, Error: errStreamNotFound}
	}
	return apiResponse{Type: typeError, Error: errNotSupported("CONSUMER." + t[1])}
}

// pull takes a CONSUMER.MSG.NEXT request on the subscription's goroutine:
// parsed here, parked or answered by the engine, which sends messages and
// statuses to the request's reply. Refusals are status messages too: a
// 400 for a request the bridge cannot serve, a 503 (no responders, as
// from nats-server) for a consumer or stream that does not exist.
func (a *API) pull(m *nats.Msg, stream, name string) {
	if m.Reply == "" {
		a.n.unanswerable.Add(1) // nats-server drops these too: nowhere to deliver
		return
	}
	a.n.pulls.Add(1)
	tenant, err := a.tenant(m)
	if err != nil || a.streams[stream] == nil {
		a.n.pullsRefused.Add(1)
		a.status(tenant, m.Reply, AppendNoResponders(nil))
		return
	}
	req, err := ParsePullRequest(m.Data)
	if err != nil {
		a.n.pullsRefused.Add(1)
		a.status(tenant, m.Reply, AppendBadRequest(nil, err.Error()))
		return
	}
	if err := a.cfg.Engine.Pull(tenant, stream, name, req, m.Reply); err != nil {
		a.n.pullsRefused.Add(1)
		if !errors.Is(err, ErrConsumerNotFound) && !errors.Is(err, ErrStreamNotFound) && pullLog.Allow() {
			a.cfg.Logger.Warn().Str("target", "jetstream").Err(err).Str("stream", stream).Str("consumer", name).Msg("pull request not taken")
		}
		a.status(tenant, m.Reply, AppendNoResponders(nil))
	}
}
