package queues

import (
	"context"
	"sync"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/storage"
)

// key names a queue of a tenant.
type key struct {
	tenant tenancy.TenantID
	name   string
}

// cache remembers queue settings for a TTL. Request goroutines share it, so
// a mutex guards the map (look-ups hold it for a map access).
type cache struct {
	db  Store
	ttl time.Duration
	mu  sync.Mutex
	m   map[key]cached
}

type cached struct {
	opts storage.QueueOptions
	at   time.Time
}

// maxCached bounds the cache: past it, it starts over rather than track age
// order.
const maxCached = 100_000

func newCache(db Store, ttl time.Duration) *cache {
	return &cache{db: db, ttl: ttl, m: map[key]cached{}}
}

// options returns a queue's settings. When the database cannot answer, a
// stale entry is better than none; with no entry at all the error is returned.
func (c *cache) options(ctx context.Context, k key) (storage.QueueOptions, error) {
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
		return storage.QueueOptions{}, err
	}
	c.put(k, q.Options)
	return q.Options, nil
}

// allFresh reports whether every queue name(i), i < n, has settings cached
// within the TTL.
func (c *cache) allFresh(tenant tenancy.TenantID, n int, name func(i int) string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	last := ""
	for i := 0; i < n; i++ {
		if q := name(i); q != last {
			if e, ok := c.m[key{tenant, q}]; !ok || time.Since(e.at) >= c.ttl {
				return false
			}
			last = q
		}
	}
	return true
}

// peek returns a queue's cached settings, fresh or not.
func (c *cache) peek(k key) (storage.QueueOptions, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	return e.opts, ok
}

// forget drops a queue's settings: the next look-up reads the database.
func (c *cache) forget(k key) {
	c.mu.Lock()
	delete(c.m, k)
	c.mu.Unlock()
}

func (c *cache) put(k key, o storage.QueueOptions) {
	c.mu.Lock()
	c.m[k] = cached{opts: o, at: time.Now()}
	if len(c.m) > maxCached {
		clear(c.m)
		c.m[k] = cached{opts: o, at: time.Now()}
	}
	c.mu.Unlock()
}
