package cursors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// CreateConsumer creates or updates a consumer (action "", "create" or
// "update", JetStream's meanings) and returns its info. The config is
// checked first (a *ConfigError names the field). Any bridge may write
// the definition; the owner's live state takes an update at once (here,
// or told through the Forwarder).
func (e *JSEngine) CreateConsumer(ctx context.Context, tenant tenancy.TenantID, stream string, cfg ConsumerConfig, action string) (ConsumerInfo, error) {
	filters, err := e.stream(stream)
	if err != nil {
		return ConsumerInfo{}, err
	}
	if action != "" && action != "create" && action != "update" {
		return ConsumerInfo{}, invalid(codeBadRequest, "bad request: action %q: \"\", \"create\" or \"update\"", action)
	}
	if err := cfg.check(filters); err != nil {
		return ConsumerInfo{}, err
	}
	name := cfg.ConsumerName()
	sc := StoredConsumer{
		Tenant: tenant, Queue: stream, Name: name, Durable: cfg.Durable != "",
		Config: encodeConfig(cfg.withDefaults()),
		Start:  ConsumerStart{Policy: storePolicies[cfg.DeliverPolicy], Time: cfg.OptStartTime},
	}
	if cfg.DeliverPolicy == DeliverByStartSequence {
		part, _ := pinnedPartition(cfg.filters(), filters)
		pid, err := e.partitionID(ctx, tenant, stream, part)
		if err != nil {
			return ConsumerInfo{}, err
		}
		sc.Start.PartitionID, sc.Start.Offset = pid, int64(cfg.OptStartSeq)
	}
	stored, err := e.cfg.Store.PutConsumer(ctx, sc, action)
	if err != nil {
		return ConsumerInfo{}, fmt.Errorf("cursors: put consumer %s of %s: %w", name, stream, err)
	}
	// What this bridge commits from now on is kept for the consumer's
	// first reads.
	e.cfg.Tail.Want(tenant, stream)
	conf, err := decodeConfig(name, stored.Config)
	if err != nil {
		return ConsumerInfo{}, err
	}
	e.mu.Lock()
	c := e.live[consumerKey{tenant, stream, name}]
	e.mu.Unlock()
	if c != nil {
		c.update(stored, conf)
		return c.info(), nil
	}
	e.tellOwner(tenant, stream, name)
	if conf.InactiveThreshold > 0 {
		// Live at once on its owner, so that its inactivity is timed from
		// now.
		_ = e.with(tenant, stream, name, func(*consumer, error, bool) {})
	}
	return e.storedInfo(ctx, stored)
}

// ConsumerInfo is a consumer's info: from its live state when it lives
// here, else from the Store (no deliveries or waiting requests known).
func (e *JSEngine) ConsumerInfo(ctx context.Context, tenant tenancy.TenantID, stream, name string) (ConsumerInfo, error) {
	if _, err := e.stream(stream); err != nil {
		return ConsumerInfo{}, err
	}
	e.mu.Lock()
	c := e.live[consumerKey{tenant, stream, name}]
	e.mu.Unlock()
	if c != nil {
		return c.freshInfo(ctx), nil
	}
	def, err := e.cfg.Store.GetConsumer(ctx, tenant, stream, name)
	if err != nil {
		return ConsumerInfo{}, fmt.Errorf("cursors: consumer %s of %s: %w", name, stream, missing(err))
	}
	return e.storedInfo(ctx, def)
}

// storedInfo is the info of a consumer not live here.
func (e *JSEngine) storedInfo(ctx context.Context, def StoredConsumer) (ConsumerInfo, error) {
	parts, err := e.cfg.Store.ConsumerPartitions(ctx, def.ID)
	if err != nil {
		return ConsumerInfo{}, fmt.Errorf("cursors: partitions of consumer %s: %w", def.Name, missing(err))
	}
	conf, err := decodeConfig(def.Name, def.Config)
	if err != nil {
		return ConsumerInfo{}, err
	}
	in := ConsumerInfo{Stream: def.Queue, Name: def.Name, Created: def.CreatedAt, Config: conf, TimeStamp: e.cfg.Clock.Now()}
	first := true
	filters := conf.filters()
	for _, p := range parts {
		if p.Last > p.Floor && mayHold(filters, e.cfg.Streams[def.Queue], p.Name) {
			in.NumPending += uint64(p.Last - p.Floor - int64(len(p.Acked)))
		}
		if p.Last > 0 && (first || uint64(p.Floor) < in.AckFloor.Stream) {
			in.AckFloor.Stream, first = uint64(max(p.Floor, 0)), false
		}
	}
	return in, nil
}

// DeleteConsumer deletes a consumer; its parked requests get 409 Consumer
// Deleted (here, or on the owner told through the Forwarder).
// ErrConsumerNotFound when there is none.
func (e *JSEngine) DeleteConsumer(ctx context.Context, tenant tenancy.TenantID, stream, name string) error {
	if _, err := e.stream(stream); err != nil {
		return err
	}
	e.mu.Lock()
	c := e.live[consumerKey{tenant, stream, name}]
	e.mu.Unlock()
	if c != nil {
		// No more deliveries or ack writes before the definition goes.
		c.mu.Lock()
		c.deleted = true
		c.mu.Unlock()
	}
	ok, err := e.cfg.Store.DeleteConsumer(ctx, tenant, stream, name)
	if c != nil {
		e.forget(c)
		c.stop(descDeleted, 409, false)
	} else if err == nil && ok {
		e.tellOwner(tenant, stream, name)
	}
	if err != nil {
		return fmt.Errorf("cursors: delete consumer %s of %s: %w", name, stream, err)
	}
	if !ok {
		return fmt.Errorf("%w: %s", ErrConsumerNotFound, name)
	}
	return nil
}

// ConsumerChanged applies a definition another bridge changed (created,
// updated or deleted) to the live consumer here, if any: its Forwarder
// calls it on the owner.
func (e *JSEngine) ConsumerChanged(ctx context.Context, tenant tenancy.TenantID, stream, name string) error {
	e.mu.Lock()
	c := e.live[consumerKey{tenant, stream, name}]
	e.mu.Unlock()
	if c == nil {
		// Loaded afresh on its next use; one that times its inactivity
		// is made live now, so that its time runs here.
		e.liveIfIdleTimed(ctx, tenant, stream, name)
		return nil
	}
	def, err := e.cfg.Store.GetConsumer(ctx, tenant, stream, name)
	if errors.Is(err, ErrConsumerMissing) {
		c.mu.Lock()
		c.deleted = true
		c.mu.Unlock()
		e.forget(c)
		c.stop(descDeleted, 409, false)
		return nil
	}
	var conf ConsumerConfig
	if err == nil {
		conf, err = decodeConfig(name, def.Config)
	}
	if err != nil {
		return fmt.Errorf("cursors: consumer %s of %s: %w", name, stream, err)
	}
	c.update(def, conf)
	return nil
}

// liveIfIdleTimed makes a consumer with an inactive threshold live here.
func (e *JSEngine) liveIfIdleTimed(ctx context.Context, tenant tenancy.TenantID, stream, name string) {
	def, err := e.cfg.Store.GetConsumer(ctx, tenant, stream, name)
	if err != nil {
		return
	}
	if conf, err := decodeConfig(name, def.Config); err == nil && conf.withDefaults().InactiveThreshold > 0 {
		_ = e.with(tenant, stream, name, func(*consumer, error, bool) {})
	}
}

// tellOwner tells the bridge owning a consumer that its definition
// changed, when that is another bridge.
func (e *JSEngine) tellOwner(tenant tenancy.TenantID, stream, name string) {
	self, id := e.cfg.Owner(tenant, stream, "$js."+name)
	if self || e.cfg.Forwarder == nil {
		return
	}
	if err := e.cfg.Forwarder.ForwardChanged(id, tenant, stream, name); err != nil {
		e.cfg.Logger.Warn().Err(err).Str("owner", id).Str("consumer", name).Msg("owner not told of a changed consumer")
	}
}

// Consumers is the info of every consumer of a stream.
func (e *JSEngine) Consumers(ctx context.Context, tenant tenancy.TenantID, stream string) ([]ConsumerInfo, error) {
	if _, err := e.stream(stream); err != nil {
		return nil, err
	}
	defs, err := e.cfg.Store.ListConsumers(ctx, tenant, stream)
	if err != nil {
		return nil, fmt.Errorf("cursors: consumers of %s: %w", stream, err)
	}
	out := make([]ConsumerInfo, 0, len(defs))
	for _, d := range defs {
		in, err := e.ConsumerInfo(ctx, tenant, stream, d.Name)
		if errors.Is(err, ErrConsumerNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, nil
}

// StreamState is a stream's figures from its queue's partitions, with its
// consumer count. A stream nothing was written to yet is empty.
func (e *JSEngine) StreamState(ctx context.Context, tenant tenancy.TenantID, stream string) (StreamState, error) {
	if _, err := e.stream(stream); err != nil {
		return StreamState{}, err
	}
	q, parts, found, err := e.cfg.Store.PartitionStats(ctx, tenant, stream)
	if err != nil {
		return StreamState{}, fmt.Errorf("cursors: state of stream %s: %w", stream, err)
	}
	var st StreamState
	if found {
		st.Created = q.CreatedAt
		for _, p := range parts {
			n := max(p.Counts.Total, 0)
			st.Messages += uint64(n)
			if n > 0 {
				if first := uint64(p.Last - n + 1); st.FirstSeq == 0 || first < st.FirstSeq {
					st.FirstSeq = first
				}
				if st.FirstTime.IsZero() || p.Oldest.Before(st.FirstTime) {
					st.FirstTime = p.Oldest
				}
			}
			st.LastSeq = max(st.LastSeq, uint64(max(p.Last, 0)))
			if p.Newest.After(st.LastTime) {
				st.LastTime = p.Newest
			}
		}
	}
	defs, err := e.cfg.Store.ListConsumers(ctx, tenant, stream)
	if err != nil {
		return StreamState{}, fmt.Errorf("cursors: consumers of %s: %w", stream, err)
	}
	st.Consumers = len(defs)
	return st, nil
}

// partitionID is the id of a stream's partition, by name.
func (e *JSEngine) partitionID(ctx context.Context, tenant tenancy.TenantID, stream, partition string) (int64, error) {
	_, parts, _, err := e.cfg.Store.PartitionStats(ctx, tenant, stream)
	if err != nil {
		return 0, fmt.Errorf("cursors: partitions of stream %s: %w", stream, err)
	}
	for _, p := range parts {
		if p.Name == partition {
			return p.ID, nil
		}
	}
	return 0, invalid(codeBadRequest, "bad request: deliver_policy by_start_sequence: the filter's partition %q holds no message yet", partition)
}

// lostInboxes are a tenant's parked inboxes, with their consumers, that
// lost interest with subject: that one, or, for a wildcard subject (the
// last subscription of a wildcard went), those it matches that have no
// interest left.
func (e *JSEngine) lostInboxes(tenant tenancy.TenantID, subject string) map[string][]*consumer {
	out := map[string][]*consumer{}
	wild := strings.ContainsAny(subject, "*>")
	add := func(inbox string, cs map[*consumer]struct{}) {
		for c := range cs {
			out[inbox] = append(out[inbox], c)
		}
	}
	e.mu.Lock()
	if !wild {
		add(subject, e.byInbox[inboxKey{tenant, subject}])
	} else {
		for k, cs := range e.byInbox {
			if k.tenant == tenant && subjectMatches(subject, k.inbox) {
				add(k.inbox, cs)
			}
		}
	}
	e.mu.Unlock()
	if wild {
		for inbox := range out {
			if e.cfg.Deliverer.Interested(tenant, inbox) {
				delete(out, inbox)
			}
		}
	}
	return out
}

// lostQueue carries the inboxes that lost interest from the Deliverer's
// reader goroutine (which must not block) to interestLoop. mu guards
// subjects.
type lostQueue struct {
	mu       sync.Mutex
	subjects []inboxKey
	signal   chan struct{}
}

func (q *lostQueue) push(tenant tenancy.TenantID, subject string) {
	q.mu.Lock()
	q.subjects = append(q.subjects, inboxKey{tenant, subject})
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// interestLoop drops the parked requests of inboxes that lost interest:
// a stopped Consume, a finished Fetch, a dead client never gets a
// message, which would wait for ack_wait.
func (e *JSEngine) interestLoop() {
	defer e.bg.Done()
	for {
		select {
		case <-e.quit:
			return
		case <-e.lost.signal:
		}
		e.lost.mu.Lock()
		subjects := e.lost.subjects
		e.lost.subjects = nil
		e.lost.mu.Unlock()
		for _, s := range subjects {
			for inbox, cs := range e.lostInboxes(s.tenant, s.inbox) {
				for _, c := range cs {
					c.dropInbox(inbox)
				}
			}
		}
	}
}
