package bridge

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"fmt"
	"sync"
	"time"

	"github.com/queenbridge/queenbridge/pgwire"
)

// queueKey names a queue of a tenant.
type queueKey struct {
	tenant [16]byte
	name   string
}

// queueCache remembers queue settings for a short TTL so that a push looks a
// queue up at most once per request and rarely at all. Request goroutines
// share it, so a mutex guards the map (look-ups hold it for a map access).
type queueCache struct {
	db  *pgwire.DB
	ttl time.Duration
	mu  sync.Mutex
	m   map[queueKey]cachedQueue
}

type cachedQueue struct {
	opts pgwire.QueueOptions
	at   time.Time
}

func newQueueCache(db *pgwire.DB, ttl time.Duration) *queueCache {
	return &queueCache{db: db, ttl: ttl, m: map[queueKey]cachedQueue{}}
}

// options returns a queue's settings. When the database cannot answer, a
// stale entry is better than none; with no entry at all the error is returned.
func (c *queueCache) options(ctx context.Context, k queueKey) (pgwire.QueueOptions, error) {
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if ok && time.Since(e.at) < c.ttl {
		return e.opts, nil
	}
	lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	q, err := c.db.LookupQueue(lctx, k.tenant, k.name)
	if err != nil {
		if ok {
			return e.opts, nil
		}
		return pgwire.QueueOptions{}, err
	}
	c.put(k, q.Options)
	return q.Options, nil
}

// allFresh reports whether every queue the items name has settings cached
// within the TTL, so that preparing them cannot wait for the database.
func (c *queueCache) allFresh(tenant [16]byte, items []pushItem) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	last := ""
	for i := range items {
		if q := items[i].Queue; q != last {
			if e, ok := c.m[queueKey{tenant, q}]; !ok || time.Since(e.at) >= c.ttl {
				return false
			}
			last = q
		}
	}
	return true
}

func (c *queueCache) put(k queueKey, o pgwire.QueueOptions) {
	c.mu.Lock()
	c.m[k] = cachedQueue{opts: o, at: time.Now()}
	if len(c.m) > 100_000 { // bound memory: start over rather than track age order
		clear(c.m)
		c.m[k] = cachedQueue{opts: o, at: time.Now()}
	}
	c.mu.Unlock()
}

// sealer encrypts payloads of encrypted queues: AES-256-GCM, the stored
// payload is nonce (12 bytes) || ciphertext || tag.
type sealer struct{ aead cipher.AEAD }

func newSealer(key []byte) (*sealer, error) {
	if key == nil {
		return nil, nil
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("bridge: encryption key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("bridge: encryption key: %w", err)
	}
	return &sealer{aead: aead}, nil
}

func (s *sealer) seal(plain []byte) []byte {
	out := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plain)+s.aead.Overhead())
	if _, err := rand.Read(out); err != nil {
		panic(fmt.Sprintf("bridge: no randomness for a nonce: %v", err))
	}
	return s.aead.Seal(out, out, plain, nil)
}

func (s *sealer) open(sealed []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n+s.aead.Overhead() {
		return nil, fmt.Errorf("bridge: encrypted payload of %d bytes is too short", len(sealed))
	}
	return s.aead.Open(nil, sealed[:n], sealed[n:], nil)
}
