package jetstream

import (
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/internal/every"
)

// handleAck takes one acknowledgement on the ack subscription's goroutine
// and hands it to the engine, which applies it (forwarding it to the
// consumer's bridge) and, when the ack carries a reply (DoubleAck), sends
// an empty message there once the acknowledgement is stored.
func (a *API) handleAck(m *nats.Msg) {
	ref, err := ParseAckSubject(m.Subject)
	if err != nil || a.streams[ref.Stream] == nil {
		// Another JetStream's ack in the same account, or a forged one:
		// not this bridge's to answer.
		a.n.acksForeign.Add(1)
		return
	}
	tenant, err := a.tenant(m)
	if err != nil {
		a.n.acksRefused.Add(1)
		a.status(tenant, m.Reply, AppendBadRequest(nil, apiNotForAccount.Description))
		return
	}
	kind, delay, reason, err := ParseAckBody(m.Data)
	switch {
	case errors.Is(err, ErrAckNext):
		// The ack part is applied; the pull part is refused, so that the
		// requester hears why it gets nothing.
		a.n.acks.Add(1)
		a.cfg.Engine.Ack(tenant, ref, AckAck, 0, "", "")
		a.status(tenant, m.Reply, AppendBadRequest(nil, ErrAckNext.Error()))
		return
	case err != nil:
		a.n.acksRefused.Add(1)
		if ackLog.Allow() {
			a.cfg.Logger.Warn().Str("target", "jetstream").Err(err).Str("subject", m.Subject).Msg("acknowledgement not understood")
		}
		a.status(tenant, m.Reply, AppendBadRequest(nil, err.Error()))
		return
	}
	a.n.acks.Add(1)
	a.cfg.Engine.Ack(tenant, ref, kind, delay, reason, m.Reply)
}

// ackLog and pullLog limit the warnings for refused acks and pulls.
var (
	ackLog  = every.New(10 * time.Second)
	pullLog = every.New(10 * time.Second)
)
