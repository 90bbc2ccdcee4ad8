package queues

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/internal/peers"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/queenbridge/queenbridge/storage"
	"github.com/rs/zerolog"
)

// Config wires queue settings to the database and the peers.
type Config struct {
	// DB holds the queues (*pgwire.DB). Required.
	DB Store
	// Peers carries the queue.changed broadcast; no NATS: none. Default none.
	Peers peers.Link
	// EncryptionKeys are the AES-256 keys (32 bytes each) by id: the highest
	// id seals, all open. None: encrypted queues refuse pushes. Default none.
	EncryptionKeys map[uint8][]byte
	// CacheTTL is how long a queue's settings are trusted. Default 2s.
	CacheTTL time.Duration
	// OnDrop is told of every deleted queue, deleted here (Dropped) or by
	// a peer (its queue.changed broadcast), with its partitions' ids: what
	// else on this bridge must forget it (the read side, the marks, the hot
	// tail, fusion). Default none.
	OnDrop func(tenant tenancy.TenantID, queue string, partitions []int64)
	// Logger for the bridge target. Default: disabled.
	Logger zerolog.Logger
}

// Settings owns the queue settings cache, configuring and encryption.
type Settings struct {
	cfg      Config
	cache    *cache
	sealer   *sealer // nil: no key
	sub      *nats.Subscription
	received atomic.Uint64 // settings taken from peers
}

// ErrNoKey: a queue cannot be switched to encryption on a bridge without a
// key.
var ErrNoKey = errors.New("options.encryptionEnabled needs QUEEN_ENCRYPTION_KEY on the bridge")

// ErrPlain marks a queue whose payloads are stored as sent (EncryptionFor).
var ErrPlain = errors.New("plaintext")

// New validates cfg.
func New(cfg Config) (*Settings, error) {
	if cfg.DB == nil {
		return nil, errors.New("queues: Config.DB is required")
	}
	if cfg.CacheTTL == 0 {
		cfg.CacheTTL = 2 * time.Second
	}
	s, err := newSealer(cfg.EncryptionKeys)
	if err != nil {
		return nil, err
	}
	return &Settings{cfg: cfg, cache: newCache(cfg.DB, cfg.CacheTTL), sealer: s}, nil
}

// Start listens for peers' queue.changed broadcasts.
func (s *Settings) Start(context.Context) error {
	sub, err := s.cfg.Peers.Subscribe(peers.QueueChanged, true, s.onChanged)
	s.sub = sub
	return err
}

// Stop ends the subscription. Idempotent.
func (s *Settings) Stop(context.Context) error {
	peers.Unsubscribe(s.sub)
	s.sub = nil
	return nil
}

// Options returns a queue's settings, cached for the TTL. When the database
// cannot answer, a stale entry is better than none; with no entry at all the
// error is returned.
func (s *Settings) Options(ctx context.Context, tenant tenancy.TenantID, queue string) (storage.QueueOptions, error) {
	return s.cache.options(ctx, key{tenant, queue})
}

// AllFresh reports whether every queue name(i), i < n, has settings cached
// within the TTL, so that looking them up cannot wait for the database.
func (s *Settings) AllFresh(tenant tenancy.TenantID, n int, name func(i int) string) bool {
	return s.cache.allFresh(tenant, n, name)
}

// ConsumerOptions are the queue options in Queen's spelling that the
// consumer API acts on at pop, ack and retention (docs/consumers.md), and
// eviction's pair, which retention acts on. They are stored with the other
// options, where the database reads them.
var ConsumerOptions = []string{"leaseTime", "retryLimit", "delayedProcessing", "windowBuffer", "retainUnconsumed",
	"retentionEnabled", "maxWaitTimeSeconds"}

// Configure creates or updates a queue (options left out keep their value),
// caches the result and broadcasts it to peers.
func (s *Settings) Configure(ctx context.Context, tenant tenancy.TenantID, queue string, upd storage.QueueUpdate) (jsonapi.QueueConfigured, error) {
	if upd.EncryptionEnabled != nil && *upd.EncryptionEnabled && s.sealer == nil {
		return jsonapi.QueueConfigured{}, ErrNoKey
	}
	q, err := s.cfg.DB.ConfigureQueue(ctx, tenant, queue, upd)
	if err != nil {
		return jsonapi.QueueConfigured{}, err
	}
	s.cache.put(key{tenant, q.Name}, q.Options)
	ch := jsonapi.QueueConfigured{Configured: true, Queue: q.Name, Tenant: uuid.UUID(q.Tenant).String(), Namespace: q.Namespace, Task: q.Task,
		Options: jsonapi.QueueOptions{EncryptionEnabled: q.Options.EncryptionEnabled, DedupWindowSeconds: q.Options.DedupWindowSeconds,
			RetentionSeconds: q.Options.RetentionSeconds, Other: q.OtherOptions}, NotActedOn: []string{}}
	for k := range q.OtherOptions {
		if !slices.Contains(ConsumerOptions, k) {
			ch.NotActedOn = append(ch.NotActedOn, k)
		}
	}
	sort.Strings(ch.NotActedOn)
	out, err := jsonapi.AppendQueueConfigured(nil, &ch)
	if err != nil {
		return ch, err
	}
	if err := s.cfg.Peers.Publish(peers.QueueChanged, out); err != nil {
		s.cfg.Logger.Warn().Str("target", "bridge").Err(err).Msg("queue settings broadcast failed; peers keep their copy for up to the cache TTL")
	}
	return ch, nil
}

// Dropped is told that a queue was deleted here (its rows are gone): the
// cached settings go, OnDrop is told, and so are the peers, at once
// (queue.changed with Deleted). The broadcast carries the settings a
// queue of that name has now, which is what a peer that does not know
// Deleted caches.
func (s *Settings) Dropped(ctx context.Context, tenant tenancy.TenantID, queue string, partitions []int64) {
	s.cache.forget(key{tenant, queue})
	if s.cfg.OnDrop != nil {
		s.cfg.OnDrop(tenant, queue, partitions)
	}
	if !s.cfg.Peers.Enabled() {
		return
	}
	// On a failed look-up the zero settings go out: a peer that does not
	// know Deleted caches them for up to its cache TTL.
	q, _ := s.cfg.DB.LookupQueue(ctx, tenant, queue)
	ev := jsonapi.QueueConfigured{Queue: queue, Tenant: uuid.UUID(tenant).String(), Namespace: q.Namespace, Task: q.Task,
		Options: jsonapi.QueueOptions{EncryptionEnabled: q.Options.EncryptionEnabled, DedupWindowSeconds: q.Options.DedupWindowSeconds,
			RetentionSeconds: q.Options.RetentionSeconds}, NotActedOn: []string{}, Deleted: true, PartitionIDs: partitions}
	out, err := jsonapi.AppendQueueConfigured(nil, &ev)
	if err == nil {
		err = s.cfg.Peers.Publish(peers.QueueChanged, out)
	}
	if err != nil {
		s.cfg.Logger.Warn().Str("target", "bridge").Err(err).Msg("queue delete broadcast failed; peers forget the queue's settings only as their cache expires, and keep the rest of what they know of it")
	}
}

// onChanged takes a peer's new queue settings into the cache, or forgets a
// queue a peer deleted.
func (s *Settings) onChanged(m *nats.Msg) {
	c, err := jsonapi.DecodeQueueConfigured(m.Data)
	if err != nil {
		return
	}
	tenant, err := tenancy.Parse(c.Tenant)
	if err != nil {
		return
	}
	if c.Deleted {
		s.cache.forget(key{tenant, c.Queue})
		if s.cfg.OnDrop != nil {
			s.cfg.OnDrop(tenant, c.Queue, c.PartitionIDs)
		}
		s.received.Add(1)
		return
	}
	o := storage.QueueOptions{EncryptionEnabled: c.Options.EncryptionEnabled,
		DedupWindowSeconds: c.Options.DedupWindowSeconds, RetentionSeconds: c.Options.RetentionSeconds}
	// The broadcast does not carry the queue's key id: the one known here
	// stays (it only ever goes up).
	if old, ok := s.cache.peek(key{tenant, c.Queue}); ok {
		o.Keyed, o.KeyID = old.Keyed, old.KeyID
	}
	s.cache.put(key{tenant, c.Queue}, o)
	s.received.Add(1)
}

// EncryptionFor says how to store payloads of a queue: nil (encrypt),
// ErrPlain, or why items of this queue must fail. Before it first answers
// nil for a queue whose recorded key id is older than the one this bridge
// seals with, it records the newer one (recordKey).
func (s *Settings) EncryptionFor(ctx context.Context, tenant tenancy.TenantID, queue string) error {
	o, err := s.Options(ctx, tenant, queue)
	switch {
	case err != nil && s.sealer != nil:
		return nil // settings unknown: encrypting is always safe when we can
	case err != nil:
		return fmt.Errorf("queue %q: settings unavailable and no encryption key to store it safely: %v", queue, err)
	case o.EncryptionEnabled && s.sealer == nil:
		return fmt.Errorf("queue %q has encryption enabled but no QUEEN_ENCRYPTION_KEY is configured", queue)
	case o.EncryptionEnabled:
		if !o.Keyed || o.KeyID < s.sealer.current {
			s.recordKey(ctx, tenant, queue)
		}
		return nil
	}
	return ErrPlain
}

// Seal encrypts a payload of (tenant, queue, partition) and returns it with
// the frame flags that say how; only after EncryptionFor answered nil.
func (s *Settings) Seal(tenant tenancy.TenantID, queue, partition string, plain []byte) ([]byte, uint8) {
	return s.sealer.seal(tenant, queue, partition, plain)
}

// Plain is a stored payload of (tenant, queue, partition) as its producer
// sent it: decrypted when flags say it was sealed, as stored otherwise. A
// sealed payload on a bridge without keys, or one that does not open, is
// an error that says which.
func (s *Settings) Plain(tenant tenancy.TenantID, queue, partition string, flags uint8, stored []byte) ([]byte, error) {
	if flags&segment.FlagEncrypted == 0 {
		return stored, nil
	}
	if s.sealer == nil {
		return nil, fmt.Errorf("queue %q holds encrypted messages and no QUEEN_ENCRYPTION_KEY is configured", queue)
	}
	return s.sealer.open(tenant, queue, partition, flags, stored)
}

// Stats are counters for the metrics.
type Stats struct {
	SettingsReceived uint64 // queue settings changes taken from peers
}

// Stats returns a snapshot.
func (s *Settings) Stats() Stats { return Stats{SettingsReceived: s.received.Load()} }
