package jetstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/auth"
	"github.com/queenbridge/queenbridge/internal/every"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/rs/zerolog"
)

// Pusher is the push path the intake feeds: bridge.Bridge's PushItem. It
// calls done exactly once, maybe on another goroutine, with the push's
// HTTP-like status and the item's result (see bridge.Bridge.PushItem).
type Pusher interface {
	PushItem(transport string, tenant tenancy.TenantID, it jsonapi.Item, done func(status int, r jsonapi.Result))
}

// Transport names the intake in the push metrics.
const Transport = "jetstream"

// QueueGroup is the queue group of every filter's subscription: the
// bridges share a stream's messages as they share pushes.
const QueueGroup = "queen-bridge"

// Config wires the intake.
type Config struct {
	// NATS is the connection the filters are subscribed on. Required when
	// there are streams.
	NATS *nats.Conn
	// Streams are the stream definitions (QUEEN_JETSTREAM). Empty: the
	// intake subscribes to nothing. Default none.
	Streams []Stream
	// Prefix is the bridge's subject prefix; no filter may overlap
	// <Prefix>.>. Default "queen".
	Prefix string
	// Push is the push path. Required when there are streams.
	Push Pusher
	// Accounts maps a message's NATS account to its tenant (the accounts
	// mode); nil or empty: every message is the default tenant's.
	// Default nil.
	Accounts *auth.Accounts
	// MaxBodyBytes caps a message body (QUEEN_MAX_BODY_BYTES); a larger one
	// is refused as JetStream refuses a message over its stream's maximum.
	// Default 16 MiB.
	MaxBodyBytes int64
	// Logger for the jetstream target. Default: disabled.
	Logger zerolog.Logger
}

// Intake takes JetStream publishes on the streams' filters and hands each
// message to the push path as one item.
type Intake struct {
	cfg     Config
	filters []*filter
	subs    subscriptions
	n       counters
	stop    sync.Once
	stopErr error
}

// New validates cfg: the stream definitions are checked together (Check).
func New(cfg Config) (*Intake, error) {
	if cfg.Prefix == "" {
		cfg.Prefix = "queen"
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 16 << 20
	}
	if cfg.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("jetstream: MaxBodyBytes must be positive, got %d", cfg.MaxBodyBytes)
	}
	cfg.Streams = append([]Stream(nil), cfg.Streams...) // the filters point into it
	filters, err := compile(cfg.Streams, cfg.Prefix)
	if err != nil {
		return nil, err
	}
	if len(filters) > 0 && (cfg.NATS == nil || cfg.Push == nil) {
		return nil, errors.New("jetstream: Config.NATS and Config.Push are required with streams")
	}
	acks := map[*Stream]*jsonapi.PubAcks{}
	for i := range cfg.Streams {
		acks[&cfg.Streams[i]] = jsonapi.NewPubAcks(cfg.Streams[i].Name)
	}
	for _, f := range filters {
		f.acks = acks[f.stream]
	}
	return &Intake{cfg: cfg, filters: filters}, nil
}

// Streams are the definitions the intake serves.
func (in *Intake) Streams() []Stream { return in.cfg.Streams }

// Start subscribes to every filter in QueueGroup. Messages are handled on
// each subscription's delivery goroutine (nats.go's, one per filter), which
// hands them to the push path and returns; the answer is sent by whichever
// goroutine settles the verdict.
func (in *Intake) Start(context.Context) error {
	for _, f := range in.filters {
		f := f
		if err := in.subs.add(in.cfg.NATS, f.text, func(m *nats.Msg) { in.handle(f, m) }); err != nil {
			return fmt.Errorf("jetstream: subscribe to %s (stream %s): %w", f.text, f.stream.Name, err)
		}
	}
	return nil
}

// Stop drains the subscriptions: the server sends no more, and the
// messages already delivered to this bridge are handed to the push path,
// which must still take them (the bridge stops its own intake after this).
// It waits, within ctx, for the drains to end. Messages the server did not
// deliver here go to the other bridges of the queue group. Idempotent.
func (in *Intake) Stop(ctx context.Context) error {
	in.stop.Do(func() {
		in.stopErr = errors.Join(in.subs.drain(ctx)...)
	})
	return in.stopErr
}

// handle takes one message on f's subscription.
func (in *Intake) handle(f *filter, m *nats.Msg) {
	if m.Reply == "" {
		in.n.unacknowledged.Add(1)
	}
	a := f.acks
	it, tenant, r := in.item(f, m)
	if r != nil {
		in.refuse(a, m.Reply, OutcomeRefused, *r)
		return
	}
	reply := m.Reply
	in.cfg.Push.PushItem(Transport, tenant, it, func(status int, res jsonapi.Result) { in.answer(a, reply, status, res) })
}

// item turns a message into a push item for its tenant, or says why it is
// refused. Nothing is written for a refused message.
func (in *Intake) item(f *filter, m *nats.Msg) (jsonapi.Item, tenancy.TenantID, *refusal) {
	var tenant tenancy.TenantID
	if in.cfg.Accounts.Enabled() {
		t, err := in.cfg.Accounts.TenantOf(m.Header.Get(auth.RequestInfoHeader))
		if err != nil {
			return jsonapi.Item{}, tenant, &refusal{codeUnavailable, errNotForAccount, "JetStream not enabled for account: " + err.Error()}
		}
		tenant = t
	}
	if int64(len(m.Data)) > in.cfg.MaxBodyBytes {
		return jsonapi.Item{}, tenant, &refusal{codeBadRequest, errTooLarge, "message size exceeds maximum allowed"}
	}
	if r := unsupported(m.Header); r != nil {
		return jsonapi.Item{}, tenant, r
	}
	if s := m.Header.Get(expectedStreamHeader); s != "" && s != f.stream.Name {
		return jsonapi.Item{}, tenant, &refusal{codeBadRequest, errStreamNotMatch, "expected stream does not match"}
	}
	it := jsonapi.Item{Queue: f.stream.Name, Partition: jsonapi.DefaultPartition}
	if p := m.Header.Get(partitionHeader); p != "" {
		if err := jsonapi.CheckName(partitionHeader, p, true); err != nil {
			return it, tenant, &refusal{codeBadRequest, errBadRequest, err.Error()}
		}
		it.Partition = p
	} else if f.wild {
		it.Partition = f.partition(m.Subject)
		if err := jsonapi.CheckName("partition", it.Partition, true); err != nil {
			return it, tenant, &refusal{codeBadRequest, errBadRequest, fmt.Sprintf("subject %q: %v", m.Subject, err)}
		}
	}
	if id := m.Header.Get(msgIDHeader); id != "" {
		if err := jsonapi.CheckName(msgIDHeader, id, true); err != nil {
			return it, tenant, &refusal{codeBadRequest, errBadRequest, err.Error()}
		}
		it.TransactionID = id
	}
	it.Payload, it.Encoded = jsonapi.BodyPayload(m.Data)
	it.Subject, it.Header = m.Subject, headerBlock(m.Header)
	return it, tenant, nil
}

// answer sends the push path's verdict in JetStream's shape and counts it.
func (in *Intake) answer(a *jsonapi.PubAcks, reply string, status int, r jsonapi.Result) {
	var buf [96]byte
	var out []byte
	outcome := OutcomeFailed
	switch {
	case r.Status == jsonapi.StatusQueued:
		outcome, out = OutcomeQueued, a.AppendQueued(buf[:0], r.Offset)
	case r.Status == jsonapi.StatusDuplicate:
		outcome, out = OutcomeDuplicate, a.AppendDuplicate(buf[:0], r.Offset)
	case r.Status == jsonapi.StatusBuffered:
		outcome, out = OutcomeBuffered, a.AppendBuffered(buf[:0])
	case status == codeBadRequest:
		in.refuse(a, reply, OutcomeRefused, refusal{codeBadRequest, errBadRequest, r.Error})
		return
	case r.Status == jsonapi.StatusFailed:
		// Neither written nor spooled: the producer must see an error and
		// retry with the same Nats-Msg-Id, never a silent ack.
		in.refuse(a, reply, OutcomeFailed, refusal{codeUnavailable, errStoreFailed, r.Error})
		return
	default: // not taken: shutting down, or the in-flight budget stayed full
		in.refuse(a, reply, OutcomeFailed, refusal{codeUnavailable, errTemporarily, r.Error})
		return
	}
	in.n.of(outcome).Add(1)
	in.publish(reply, out)
}

// refuse answers r and counts the message under outcome.
func (in *Intake) refuse(a *jsonapi.PubAcks, reply, outcome string, r refusal) {
	in.n.of(outcome).Add(1)
	if reply == "" {
		// Nobody hears it: say so, at most every few seconds.
		if lostLog.Allow() {
			in.cfg.Logger.Warn().Str("target", "jetstream").Str("outcome", outcome).Str("error", r.desc).
				Msg("a message without a reply subject was not stored (counted in queen_jetstream_messages_total)")
		}
		return
	}
	var buf [256]byte
	in.publish(reply, a.AppendFailed(buf[:0], r.code, r.errCode, r.desc))
}

// lostLog limits the warning for unanswered messages that were not stored.
var lostLog = every.New(10 * time.Second)

// publish sends an answer (nats.go copies it into its write buffer, so the
// caller's buffer may be reused).
func (in *Intake) publish(reply string, body []byte) {
	if reply == "" {
		return
	}
	if err := in.cfg.NATS.Publish(reply, body); err != nil {
		in.cfg.Logger.Debug().Str("target", "jetstream").Err(err).Msg("answer not sent")
	}
}
