package bridge

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/queenbridge/queenbridge/cursors"
	"github.com/queenbridge/queenbridge/internal/leaf"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jetstream"
	"github.com/queenbridge/queenbridge/readside"
	"github.com/queenbridge/queenbridge/segment"
)

// jsConsumers are the rooms that serve JetStream pull consumers on the
// declared streams: the engine (cursors), the API and the forwards to
// other bridges (jetstream), and the leaf connections they deliver on. Made
// by New when streams and a leafnode listener are configured, started by
// Start, stopped by Stop.
type jsConsumers struct {
	engine   *cursors.JSEngine
	api      *jetstream.API
	forwards *jetstream.Forwards
	link     *leafLink
}

// newJSConsumers builds them; nil without streams or a leafnode URL. Their
// reads of what this bridge committed last come from the hot tail.
func (b *Bridge) newJSConsumers(tail *cursors.Tail) (*jsConsumers, error) {
	cfg := &b.cfg
	if len(cfg.JetStream) == 0 || cfg.LeafURL == "" || cfg.NATS == nil {
		return nil, nil
	}
	j := &jsConsumers{link: &leafLink{}}
	streams := make(map[string][]string, len(cfg.JetStream))
	for _, s := range cfg.JetStream {
		streams[s.Name] = s.Filters
	}
	var err error
	j.engine, err = cursors.NewEngine(cursors.Config{
		Store: cfg.DB, Deliverer: j.link, Streams: streams, Plain: b.queues.Plain, Logger: cfg.Logger, Tail: tail,
		Owner: func(tenant tenancy.TenantID, stream, key string) (bool, string) {
			id := b.router.Owner(tenant, stream, key)
			return id == "", id
		},
		Forwarder: jsForwarder{j},
	})
	if err != nil {
		return nil, err
	}
	if j.forwards, err = jetstream.NewForwards(jetstream.ForwardConfig{NATS: cfg.NATS, Prefix: cfg.Prefix, ID: b.id,
		Engine: j.engine, Logger: cfg.Logger}); err != nil {
		return nil, err
	}
	if j.api, err = jetstream.NewAPI(jetstream.APIConfig{NATS: cfg.NATS, Streams: cfg.JetStream, Engine: j.engine, Status: j.link,
		AckConnection: true, Accounts: b.accounts, MaxBodyBytes: cfg.MaxBodyBytes, Logger: cfg.Logger}); err != nil {
		return nil, err
	}
	return j, nil
}

// start dials the leafnode listener (one connection per tenant account in
// the accounts mode), then starts the engine, the forwards and the API
// (last: a request it takes finds the rest running).
func (j *jsConsumers) start(ctx context.Context, cfg *Config) error {
	if j == nil {
		return nil
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	set, err := dialLeaves(dctx, cfg)
	cancel()
	if err != nil {
		return err
	}
	j.link.set(set)
	for _, room := range []interface{ Start(context.Context) error }{j.engine, j.forwards, j.api} {
		if err := room.Start(ctx); err != nil {
			return err
		}
	}
	return nil
}

// stop ends intake first (the API's subscriptions, then the forwards),
// then the engine (parked requests hear 408 and pull again elsewhere; the
// last acknowledgements are stored), then the leaf connection.
func (j *jsConsumers) stop(ctx context.Context) error {
	if j == nil {
		return nil
	}
	var errs []error
	for _, room := range []interface{ Stop(context.Context) error }{j.api, j.forwards, j.engine} {
		if err := room.Stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if set := j.link.leaves.Load(); set != nil {
		if err := set.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// dropped forgets the live consumers of a deleted queue.
func (j *jsConsumers) dropped(tenant tenancy.TenantID, queue string) {
	if j != nil {
		j.engine.Dropped(tenant, queue)
	}
}

// listeners hand the read side's announcements to each of them.
type listeners []readside.Listener

func (ls listeners) Heard(tenant tenancy.TenantID, queue, partition string, pushed bool) {
	for _, l := range ls {
		l.Heard(tenant, queue, partition, pushed)
	}
}

func (ls listeners) Listening() bool {
	for _, l := range ls {
		if l.Listening() {
			return true
		}
	}
	return false
}

// committed is the fusion's commit hook's part for the engine.
func (j *jsConsumers) committed(writes []segment.Write, results []segment.Result) {
	if j != nil {
		j.engine.Committed(writes, results)
	}
}

// leafLink is the engine's Deliverer and the API's status publisher: the
// leaf connections, one per tenant account, once start dialled them (the
// engine is made before).
type leafLink struct {
	leaves atomic.Pointer[leaf.Set]
	lost   atomic.Pointer[func(tenancy.TenantID, string)]
}

func (l *leafLink) set(s *leaf.Set) {
	l.leaves.Store(s)
	if fn := l.lost.Load(); fn != nil {
		s.OnInterestLost(*fn)
	}
}

func (l *leafLink) Publish(tenant tenancy.TenantID, subject, reply string, header, body []byte) error {
	s := l.leaves.Load()
	if s == nil {
		return leaf.ErrNotConnected
	}
	return s.Publish(tenant, subject, reply, header, body)
}

// Hold and Release bracket a batch of Publish calls (leaf.Conn.Hold). The
// set is loaded once per call: a Release meets another set than its Hold
// only when the set came between them, and a Release of a Conn never
// held ends nothing.
func (l *leafLink) Hold(tenant tenancy.TenantID) {
	if s := l.leaves.Load(); s != nil {
		s.Hold(tenant)
	}
}

func (l *leafLink) Release(tenant tenancy.TenantID) {
	if s := l.leaves.Load(); s != nil {
		s.Release(tenant)
	}
}

func (l *leafLink) Interested(tenant tenancy.TenantID, subject string) bool {
	s := l.leaves.Load()
	return s != nil && s.Interested(tenant, subject)
}

func (l *leafLink) OnInterestLost(fn func(tenancy.TenantID, string)) {
	l.lost.Store(&fn)
	if s := l.leaves.Load(); s != nil {
		s.OnInterestLost(fn)
	}
}

// jsForwarder is the engine's Forwarder: the forwards, made after the
// engine they serve.
type jsForwarder struct{ j *jsConsumers }

func (f jsForwarder) ForwardPull(owner string, tenant tenancy.TenantID, stream, name string, req cursors.PullRequest, inbox string) error {
	return f.j.forwards.ForwardPull(owner, tenant, stream, name, req, inbox)
}

func (f jsForwarder) ForwardAck(owner string, tenant tenancy.TenantID, ack cursors.AckRef, kind cursors.AckKind, delay time.Duration, reason, reply string) error {
	return f.j.forwards.ForwardAck(owner, tenant, ack, kind, delay, reason, reply)
}

func (f jsForwarder) ForwardChanged(owner string, tenant tenancy.TenantID, stream, name string) error {
	return f.j.forwards.ForwardChanged(owner, tenant, stream, name)
}
