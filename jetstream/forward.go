package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/cursors"
	"github.com/queenbridge/queenbridge/internal/every"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/rs/zerolog"
)

// A consumer lives on one bridge (its owner). A pull or an ack that
// reaches another bridge is forwarded to the owner on
// <prefix>.v1.js.<owner id>.{next,ack,changed}, with what the owner needs
// to answer the requester itself (the inbox, the double ack's reply):
// nothing comes back on the forward. A definition created, updated or
// deleted on another bridge is told to the owner (changed), so that its
// live state takes it.

// The consumers' room's engine serves the API and takes forwards; the
// forwards carry its requests to the owner.
var (
	_ Engine            = (*cursors.JSEngine)(nil)
	_ ForwardEngine     = (*cursors.JSEngine)(nil)
	_ cursors.Forwarder = (*Forwards)(nil)
)

// ForwardEngine takes, on the owner, what another bridge forwarded
// (*cursors.JSEngine): it never forwards again.
type ForwardEngine interface {
	PullForwarded(tenant tenancy.TenantID, stream, name string, req PullRequest, inbox string) error
	AckForwarded(tenant tenancy.TenantID, ack AckRef, kind AckKind, delay time.Duration, reason, reply string) error
	ConsumerChanged(ctx context.Context, tenant tenancy.TenantID, stream, name string) error
}

// ForwardConfig wires the forwards.
type ForwardConfig struct {
	NATS   *nats.Conn // Required.
	Prefix string     // the bridges' subject prefix. Required.
	ID     string     // this bridge's id. Required.
	// Engine takes the forwards addressed to this bridge. Required.
	Engine ForwardEngine
	// Timeout bounds a changed definition's look-up. Default 5s.
	Timeout time.Duration
	Logger  zerolog.Logger
}

// Forwards carries pulls, acks and definition changes to the owning
// bridge (it satisfies cursors.Forwarder) and takes those addressed here.
// One subscription, on this bridge's own subject; nats.go's delivery
// goroutine hands each forward to the engine, which only queues it.
type Forwards struct {
	cfg                  ForwardConfig
	subs                 subscriptions
	sent, taken, refused atomic.Uint64
}

// ForwardStats are the forwards' counters.
type ForwardStats struct {
	Sent    uint64 // forwards published to an owner
	Taken   uint64 // forwards addressed here, handed to the engine
	Refused uint64 // forwards addressed here that did not decode, or found ownership moved on
}

// NewForwards checks cfg.
func NewForwards(cfg ForwardConfig) (*Forwards, error) {
	if cfg.NATS == nil || cfg.Prefix == "" || cfg.ID == "" || cfg.Engine == nil {
		return nil, errors.New("jetstream: ForwardConfig.NATS, Prefix, ID and Engine are required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	return &Forwards{cfg: cfg}, nil
}

// forwardSubject is where the bridge id takes forwards of a kind.
func forwardSubject(prefix, id, kind string) string { return prefix + ".v1.js." + id + "." + kind }

// Start subscribes to this bridge's forward subjects.
func (f *Forwards) Start(context.Context) error {
	if err := f.subs.add(f.cfg.NATS, forwardSubject(f.cfg.Prefix, f.cfg.ID, "*"), f.take); err != nil {
		return fmt.Errorf("jetstream: subscribe to forwards: %w", err)
	}
	return nil
}

// Stop drains the subscription: forwards already delivered here are
// taken.
func (f *Forwards) Stop(ctx context.Context) error { return errors.Join(f.subs.drain(ctx)...) }

// Stats returns a snapshot.
func (f *Forwards) Stats() ForwardStats {
	return ForwardStats{Sent: f.sent.Load(), Taken: f.taken.Load(), Refused: f.refused.Load()}
}

// forward is one forwarded request, JSON on the wire between bridges.
type forward struct {
	Tenant string `json:"tenant"`
	Stream string `json:"stream"`
	Name   string `json:"consumer"`
	// next
	Inbox     string        `json:"inbox,omitempty"`
	Batch     int           `json:"batch,omitempty"`
	MaxBytes  int           `json:"max_bytes,omitempty"`
	Expires   time.Duration `json:"expires,omitempty"`
	NoWait    bool          `json:"no_wait,omitempty"`
	Heartbeat time.Duration `json:"idle_heartbeat,omitempty"`
	// ack
	Ack    *AckRef       `json:"ack,omitempty"`
	Kind   AckKind       `json:"kind,omitempty"`
	Delay  time.Duration `json:"delay,omitempty"`
	Reason string        `json:"reason,omitempty"`
	Reply  string        `json:"reply,omitempty"`
}

func (f *Forwards) send(owner, kind string, fw forward) error {
	data, err := json.Marshal(fw)
	if err != nil {
		return fmt.Errorf("jetstream: forward %s: %w", kind, err)
	}
	if err := f.cfg.NATS.Publish(forwardSubject(f.cfg.Prefix, owner, kind), data); err != nil {
		return fmt.Errorf("jetstream: forward %s to %s: %w", kind, owner, err)
	}
	f.sent.Add(1)
	return nil
}

// ForwardPull sends a pull request to the consumer's owner, which
// delivers to inbox itself.
func (f *Forwards) ForwardPull(owner string, tenant tenancy.TenantID, stream, name string, req PullRequest, inbox string) error {
	return f.send(owner, "next", forward{Tenant: tenantText(tenant), Stream: stream, Name: name, Inbox: inbox,
		Batch: req.Batch, MaxBytes: req.MaxBytes, Expires: req.Expires, NoWait: req.NoWait, Heartbeat: req.Heartbeat})
}

// ForwardAck sends an acknowledgement to the consumer's owner, which
// answers reply (a double ack) itself once it is stored.
func (f *Forwards) ForwardAck(owner string, tenant tenancy.TenantID, ack AckRef, kind AckKind, delay time.Duration, reason, reply string) error {
	return f.send(owner, "ack", forward{Tenant: tenantText(tenant), Stream: ack.Stream, Name: ack.Consumer, Ack: &ack,
		Kind: kind, Delay: delay, Reason: reason, Reply: reply})
}

// ForwardChanged tells the consumer's owner that its definition changed
// and waits until the owner applied it, so that what the caller answers
// next (a deleted consumer is gone) holds on every bridge.
func (f *Forwards) ForwardChanged(owner string, tenant tenancy.TenantID, stream, name string) error {
	data, err := json.Marshal(forward{Tenant: tenantText(tenant), Stream: stream, Name: name})
	if err != nil {
		return fmt.Errorf("jetstream: forward changed: %w", err)
	}
	f.sent.Add(1)
	m, err := f.cfg.NATS.Request(forwardSubject(f.cfg.Prefix, owner, "changed"), data, f.cfg.Timeout)
	if err != nil {
		return fmt.Errorf("jetstream: forward changed to %s: %w", owner, err)
	}
	if len(m.Data) > 0 {
		return fmt.Errorf("jetstream: forward changed to %s: %s", owner, m.Data)
	}
	return nil
}

func tenantText(t tenancy.TenantID) string { return uuid.UUID(t).String() }

// take hands a forward addressed here to the engine.
func (f *Forwards) take(m *nats.Msg) {
	var fw forward
	err := json.Unmarshal(m.Data, &fw)
	var tenant tenancy.TenantID
	if err == nil {
		tenant, err = tenancy.Parse(fw.Tenant)
	}
	kind := m.Subject[len(forwardSubject(f.cfg.Prefix, f.cfg.ID, "")):]
	if err == nil {
		switch kind {
		case "next":
			err = f.cfg.Engine.PullForwarded(tenant, fw.Stream, fw.Name,
				PullRequest{Batch: fw.Batch, MaxBytes: fw.MaxBytes, Expires: fw.Expires, NoWait: fw.NoWait, Heartbeat: fw.Heartbeat}, fw.Inbox)
		case "ack":
			if fw.Ack == nil {
				err = errors.New("an ack forward without its ack")
				break
			}
			err = f.cfg.Engine.AckForwarded(tenant, *fw.Ack, fw.Kind, fw.Delay, fw.Reason, fw.Reply)
		case "changed":
			ctx, cancel := context.WithTimeout(context.Background(), f.cfg.Timeout)
			err = f.cfg.Engine.ConsumerChanged(ctx, tenant, fw.Stream, fw.Name)
			cancel()
			if m.Reply != "" {
				// The sender waits for this: empty when applied.
				var answer []byte
				if err != nil {
					answer = []byte(err.Error())
				}
				_ = m.Respond(answer)
			}
		default:
			err = fmt.Errorf("unknown forward kind %q", kind)
		}
	}
	if err != nil {
		f.refused.Add(1)
		if forwardLog.Allow() {
			f.cfg.Logger.Warn().Str("target", "jetstream").Err(err).Str("subject", m.Subject).Msg("forward not taken")
		}
		return
	}
	f.taken.Add(1)
}

// forwardLog limits the warnings of forwards not taken.
var forwardLog = every.New(10 * time.Second)
