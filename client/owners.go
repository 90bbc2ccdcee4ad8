package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/internal/buckets"
)

// Partition-aware pushes (Config.PartitionAware): the client keeps the
// bridges' owners' table (bucket -> bridge), read from <prefix>.v1.owners
// and renewed by every announcement on <prefix>.v1.owners.changed, and
// sends each part of a push to its owner's own push subject, so that no
// bridge forwards it. The table is advice: the bridge that receives a part
// checks ownership as for any push and forwards what it does not own, so a
// stale table costs a forward, never a wrong write. A part whose owner does
// not answer (no responders, its timeout, 503) goes to the shared subject
// at once, and so does every later part for that owner until a newer table
// arrives: those are the fallbacks.

// ownerTable is one table as the client uses it; never changed once built,
// but for down.
type ownerTable struct {
	version  string
	tenant   [16]byte
	buckets  int
	subjects []string       // per bridge: its push subject (with the tenant suffix in the single-account mode)
	owner    []int32        // bucket -> index into subjects
	down     []atomic.Int64 // per bridge: until when (unix ns) the shared subject takes its parts: it did not answer
}

// downFor is how long a bridge that did not answer is passed over while the
// table stays the same: a refusal under a burst (503) or a reconnect is
// brief, and the table of a stable cluster may not change for hours.
const downFor = 5 * time.Second

// owners is a client's view of the bridges' ownership.
type owners struct {
	tab atomic.Pointer[ownerTable]
	sub *nats.Subscription
	// tenant is the tenant the bucket hash takes: the configured one, or
	// in the accounts mode the one the bridge named in its answer (known
	// once a fetch succeeded; announcements are ignored before).
	tenant      atomic.Pointer[[16]byte]
	configured  [16]byte
	tenantInSub string      // ".<tenant>" on owner subjects in the single-account mode; set in New, then read only
	accounts    atomic.Bool // the bridges named this client's tenant: the accounts mode, no suffix

	// mu guards fetching, lastFetch and closed: one fetch at a time, at
	// most one per refetchEvery, none after Close.
	mu        sync.Mutex
	closed    bool
	fetching  bool
	lastFetch time.Time
	fetchWG   sync.WaitGroup // the fetch goroutines; Close waits

	fallbacks, ownerParts, fetches atomic.Uint64
}

// refetchEvery bounds how often a client asks for the table when its own
// looks stale.
const refetchEvery = 250 * time.Millisecond

// Stats counts what a partition-aware client did.
type Stats struct {
	// OwnerParts is the parts of pushes sent to a bridge's own subject.
	OwnerParts uint64
	// Fallbacks is the items sent to the shared subject because their
	// owner did not answer (or had not, since the table was read).
	Fallbacks uint64
	// TableFetches is the tables read with a request (announcements not
	// counted).
	TableFetches uint64
	// TableVersion names the table in use ("" while there is none).
	TableVersion string
}

// Stats returns a snapshot of the partition-aware counters.
func (c *Client) Stats() Stats {
	if c.own == nil {
		return Stats{}
	}
	s := Stats{OwnerParts: c.own.ownerParts.Load(), Fallbacks: c.own.fallbacks.Load(), TableFetches: c.own.fetches.Load()}
	if t := c.own.tab.Load(); t != nil {
		s.TableVersion = t.version
	}
	return s
}

// startOwners subscribes to announcements and reads the table once; a
// table that cannot be read now is read again on a later push.
func (c *Client) startOwners() error {
	o := &owners{}
	if c.cfg.Tenant != "" {
		id, err := uuid.Parse(c.cfg.Tenant)
		if err != nil {
			return fmt.Errorf("client: Config.Tenant %q is not a UUID: %w", c.cfg.Tenant, err)
		}
		o.configured = id
		o.tenantInSub = "." + c.cfg.Tenant
	}
	c.own = o
	sub, err := c.cfg.NATS.Subscribe(c.cfg.Prefix+".v1.owners.changed", func(m *nats.Msg) {
		tenant := o.tenant.Load()
		if tenant == nil {
			return
		}
		if t, err := o.parse(m.Data, *tenant); err == nil {
			o.adopt(t)
		}
	})
	if err != nil {
		return fmt.Errorf("client: subscribe to the owners' announcements: %w", err)
	}
	o.sub = sub
	c.fetchOwners()
	return nil
}

// fetchOwners reads the table with a request, here.
func (c *Client) fetchOwners() {
	o := c.own
	o.fetches.Add(1)
	msg, err := c.cfg.NATS.Request(c.cfg.Prefix+".v1.owners", nil, c.cfg.OwnerTimeout)
	if err != nil || msg.Header.Get("Nats-Service-Error-Code") != "" {
		return
	}
	var head struct {
		Tenant string `json:"tenant"`
	}
	if json.Unmarshal(msg.Data, &head) != nil {
		return
	}
	tenant := o.configured
	if head.Tenant != "" {
		id, err := uuid.Parse(head.Tenant)
		if err != nil {
			return
		}
		tenant = id
		o.accounts.Store(true) // the account decides the tenant
	}
	t, err := o.parse(msg.Data, tenant)
	if err != nil {
		return
	}
	o.tenant.Store(&tenant)
	o.adopt(t)
}

// refetch reads the table again on a goroutine of its own, unless a read
// is under way or one was started within refetchEvery.
func (c *Client) refetch() {
	o := c.own
	o.mu.Lock()
	if o.closed || o.fetching || time.Since(o.lastFetch) < refetchEvery {
		o.mu.Unlock()
		return
	}
	o.fetching, o.lastFetch = true, time.Now()
	o.fetchWG.Add(1)
	o.mu.Unlock()
	go func() {
		defer o.fetchWG.Done()
		c.fetchOwners()
		o.mu.Lock()
		o.fetching = false
		o.mu.Unlock()
	}()
}

// adopt installs t unless the table in use has the same version (which
// keeps what it learned of bridges that did not answer).
func (o *owners) adopt(t *ownerTable) {
	if cur := o.tab.Load(); cur != nil && cur.version == t.version {
		return
	}
	o.tab.Store(t)
}

// parse checks and builds a table from its JSON.
func (o *owners) parse(data []byte, tenant [16]byte) (*ownerTable, error) {
	var w struct {
		Version string `json:"version"`
		Buckets int    `json:"buckets"`
		Bridges []struct {
			Subject string `json:"subject"`
		} `json:"bridges"`
		Owners []int32 `json:"owners"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return nil, err
	}
	if w.Version == "" || w.Buckets < 1 || len(w.Owners) != w.Buckets || len(w.Bridges) == 0 {
		return nil, errors.New("client: an owners' table without a version, buckets or bridges")
	}
	t := &ownerTable{version: w.Version, tenant: tenant, buckets: w.Buckets, owner: w.Owners,
		subjects: make([]string, len(w.Bridges)), down: make([]atomic.Int64, len(w.Bridges))}
	for i, b := range w.Bridges {
		if b.Subject == "" || strings.ContainsAny(b.Subject, "*> \t\r\n") {
			return nil, fmt.Errorf("client: owners' table names subject %q", b.Subject)
		}
		t.subjects[i] = b.Subject
		if !o.accounts.Load() {
			t.subjects[i] += o.tenantInSub
		}
	}
	for _, ix := range w.Owners {
		if ix < 0 || int(ix) >= len(w.Bridges) {
			return nil, errors.New("client: owners' table names a bridge it does not list")
		}
	}
	return t, nil
}

// ownerOf is the index of the bridge that owns it, or -1 when the shared
// subject must take it (its owner did not answer).
func (t *ownerTable) ownerOf(it *Item) int {
	p := it.Partition
	if p == "" {
		p = "Default"
	}
	ix := int(t.owner[buckets.Of(t.tenant, it.Queue, p, t.buckets)])
	if until := t.down[ix].Load(); until != 0 && time.Now().UnixNano() < until {
		return -1
	}
	return ix
}

// overOwners sends each part of data's items to its owner and merges the
// answers in order. With no table it is the shared subject's push.
func (c *Client) overOwners(ctx context.Context, items []Item) ([]Result, error) {
	t := c.own.tab.Load()
	if t == nil {
		c.refetch()
		return c.overSubject(ctx, c.subject, items)
	}
	first := t.ownerOf(&items[0])
	same := true
	for i := 1; i < len(items) && same; i++ {
		same = t.ownerOf(&items[i]) == first
	}
	if same {
		return c.toOwner(ctx, t, first, items)
	}
	parts := map[int][]int{} // owner -> indexes of its items
	for i := range items {
		o := t.ownerOf(&items[i])
		parts[o] = append(parts[o], i)
	}
	results := make([]Result, len(items))
	errs := make([]error, 0, len(parts))
	var mu sync.Mutex // guards errs: the part goroutines append
	var wg sync.WaitGroup
	for owner, idx := range parts {
		wg.Add(1)
		go func() { // owned by this call, which waits for it
			defer wg.Done()
			batch := make([]Item, len(idx))
			for k, i := range idx {
				batch[k] = items[i]
			}
			rs, err := c.toOwner(ctx, t, owner, batch)
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			for k, i := range idx {
				results[i] = rs[k]
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return results, nil
}

// toOwner sends items to bridge ix of t (-1: the shared subject); when it
// does not answer, it is marked down in t, the table is read again, and
// the items go to the shared subject.
func (c *Client) toOwner(ctx context.Context, t *ownerTable, ix int, items []Item) ([]Result, error) {
	if ix < 0 {
		c.own.fallbacks.Add(uint64(len(items)))
		return c.overSubject(ctx, c.subject, items)
	}
	c.own.ownerParts.Add(1)
	octx, cancel := context.WithTimeout(ctx, c.cfg.OwnerTimeout)
	rs, err := c.overSubject(octx, t.subjects[ix], items)
	cancel()
	var refused *RequestError
	switch {
	case err == nil:
		return rs, nil
	case ctx.Err() != nil:
		return nil, err
	case errors.Is(err, nats.ErrNoResponders), errors.As(err, &refused) && refused.Status == http.StatusServiceUnavailable:
		// Gone or going: nothing more for it from this table.
		t.down[ix].Store(time.Now().Add(downFor).UnixNano())
		c.refetch()
	case errors.Is(err, nats.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		// Slow, maybe gone: this part goes elsewhere; the table is read
		// again. The owner may still write it; the retry through the
		// shared subject is then answered duplicate.
		c.refetch()
	default:
		return nil, err
	}
	c.own.fallbacks.Add(uint64(len(items)))
	return c.overSubject(ctx, c.subject, items)
}
