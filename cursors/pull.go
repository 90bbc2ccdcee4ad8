package cursors

import (
	"errors"
	"strconv"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// pullReq is one parked pull request.
type pullReq struct {
	inbox     string
	left      int // messages still wanted
	maxBytes  bool
	bytesLeft int // of max_bytes, when maxBytes
	expires   time.Time
	noWait    bool
	hb        time.Duration
	parked    time.Time // when it came
	lastSent  time.Time // the last message or status sent to inbox
	delivered int
	checked   bool // interest in inbox seen during this fill
	// unheard: the hub did not report interest in inbox yet at the last
	// pass (interestNotYet); nothing is sent to it meanwhile, a no_wait's
	// 404 included, since nothing was looked for on its behalf.
	unheard bool
	// looked: a no_wait request made its consumer look at the Store once
	// (freshNoWait) before it can be told there is nothing: a commit
	// whose PubAck the requester already has may not have reached this
	// bridge's memory yet (another bridge's, or one still in the hook).
	looked bool
}

// Pull parks a pull request, or answers it (statuses included) through
// the Deliverer; the messages go to inbox. It never waits for PostgreSQL:
// a consumer not live here yet is loaded first, and the request parks
// then. A consumer deleted while live here is ErrConsumerNotFound (the API
// answers 503); one found missing by the load gets the 503 from here. A
// consumer living on another bridge gets the request through the
// Forwarder (ErrNotOwner without one).
func (e *JSEngine) Pull(tenant tenancy.TenantID, stream, name string, req PullRequest, inbox string) error {
	err := e.pull(tenant, stream, name, req, inbox)
	if id, ok := IsNotOwner(err); ok && e.cfg.Forwarder != nil {
		return e.cfg.Forwarder.ForwardPull(id, tenant, stream, name, req, inbox)
	}
	return err
}

// PullForwarded takes a pull request another bridge forwarded here, the
// consumer's owner. It never forwards again: when ownership moved on
// meanwhile, the request is answered 409 Leadership Change (its client
// pulls again and reaches the new owner) and ErrNotOwner returned.
func (e *JSEngine) PullForwarded(tenant tenancy.TenantID, stream, name string, req PullRequest, inbox string) error {
	err := e.pull(tenant, stream, name, req, inbox)
	if _, ok := IsNotOwner(err); ok {
		e.publish(tenant, inbox, "", statusHeader(409, descLeadership, false, 0, 0), nil)
	}
	return err
}

func (e *JSEngine) pull(tenant tenancy.TenantID, stream, name string, req PullRequest, inbox string) error {
	var parked error
	err := e.with(tenant, stream, name, func(c *consumer, err error, later bool) {
		if err == nil {
			err = c.park(req, inbox)
		}
		if !later {
			parked = err
			return
		}
		switch {
		case err == nil:
		case errors.Is(err, ErrConsumerNotFound):
			e.publish(tenant, inbox, "", noResponders, nil)
		default:
			// Stopping, or the Store failed: the client pulls again.
			e.publish(tenant, inbox, "", statusHeader(408, descTimeout, true, max(req.Batch, 1), req.MaxBytes), nil)
		}
	})
	if err != nil {
		return err
	}
	return parked
}

// noResponders is the status nats-server's no responders carries: what a
// pull of a consumer that does not exist gets.
var noResponders = []byte("NATS/1.0 503\r\n\r\n")

// park takes a pull request.
func (c *consumer) park(req PullRequest, inbox string) error {
	e := c.e
	if req.Batch <= 0 {
		req.Batch = 1
	}
	now := e.cfg.Clock.Now()
	r := &pullReq{inbox: inbox, left: req.Batch, noWait: req.NoWait, hb: req.Heartbeat, parked: now, lastSent: now}
	if req.MaxBytes > 0 {
		r.maxBytes, r.bytesLeft = true, req.MaxBytes
	}
	if req.Expires > 0 {
		r.expires = now.Add(req.Expires)
	}
	c.mu.Lock()
	if c.stopping {
		c.mu.Unlock()
		return ErrConsumerNotFound
	}
	c.lastActive, c.touched = now, true
	cfg := &c.cfg
	switch {
	case cfg.MaxRequestBatch > 0 && req.Batch > cfg.MaxRequestBatch:
		c.status(r, 409, descMaxRequestBatch+strconv.Itoa(cfg.MaxRequestBatch), false)
	case cfg.MaxRequestMaxBytes > 0 && req.MaxBytes > cfg.MaxRequestMaxBytes:
		c.status(r, 409, descMaxRequestBytes+strconv.Itoa(cfg.MaxRequestMaxBytes), false)
	case cfg.MaxRequestExpires > 0 && req.Expires > cfg.MaxRequestExpires:
		c.status(r, 409, descMaxRequestExp+cfg.MaxRequestExpires.String(), false)
	case len(c.waiting) >= cfg.MaxWaiting:
		// A request with heartbeats gets no 409, as from nats-server: its
		// client would pull again at once, in a loop; it waits for the
		// missing heartbeats instead.
		if req.Heartbeat == 0 {
			c.status(r, 409, descMaxWaiting, false)
		}
	default:
		// What other bridges and transactions committed reaches the
		// consumer by their announcements (Heard), and the poll is the
		// backstop: a new request does not read the store for them.
		c.waiting = append(c.waiting, r)
		e.stats.parked.Add(1)
		e.parkInbox(inbox, c)
	}
	c.mu.Unlock()
	c.wake()
	return nil
}

// wake asks the consumer's goroutine to fill its requests.
func (c *consumer) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// status sends a status message to r's inbox. Under mu.
func (c *consumer) status(r *pullReq, code int, desc string, withPending bool) {
	c.e.publish(c.key.tenant, r.inbox, "", statusHeader(code, desc, withPending, r.left, r.bytesLeft), nil)
	r.lastSent = c.e.cfg.Clock.Now()
}

// unpark removes waiting[i]. Under mu.
func (c *consumer) unpark(i int) {
	r := c.waiting[i]
	c.waiting = append(c.waiting[:i], c.waiting[i+1:]...)
	c.e.stats.parked.Add(-1)
	for _, o := range c.waiting {
		if o.inbox == r.inbox {
			return // another request of the same inbox stays parked
		}
	}
	c.e.unparkInbox(r.inbox, c)
}

// dropInbox drops the requests of an inbox that lost interest, without
// a word: nobody listens.
func (c *consumer) dropInbox(inbox string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := 0; i < len(c.waiting); {
		if c.waiting[i].inbox == inbox {
			c.unpark(i)
			c.e.stats.interestLost.Add(1)
			continue
		}
		i++
	}
}

// interestRecheck is how soon a request waiting for its inbox's interest
// is looked at again.
const interestRecheck = 10 * time.Millisecond

// timers expires requests (408 with pending headers), sends heartbeats
// after idle_heartbeat of silence, and reports when it must run next and
// whether the consumer has been idle past its inactive threshold. Under mu.
func (c *consumer) timers(now time.Time) (next time.Time, idle bool) {
	soon := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for i := 0; i < len(c.waiting); {
		r := c.waiting[i]
		if !r.expires.IsZero() && !now.Before(r.expires) {
			c.status(r, 408, descTimeout, true)
			c.unpark(i)
			c.e.stats.expired.Add(1)
			continue
		}
		if r.hb > 0 && !now.Before(r.lastSent.Add(r.hb)) {
			if c.interest(r, now) == interestGone {
				c.unpark(i)
				c.e.stats.interestLost.Add(1)
				continue
			}
			c.e.publish(c.key.tenant, r.inbox, "", heartbeatHeader(c.cseq, c.lastStream), nil)
			r.lastSent = now
			c.e.stats.heartbeats.Add(1)
		}
		if !r.expires.IsZero() {
			soon(r.expires)
		}
		if r.hb > 0 {
			soon(r.lastSent.Add(r.hb))
		}
		i++
	}
	if c.soon {
		c.soon = false
		soon(now.Add(interestRecheck))
	}
	if len(c.waiting) > 0 {
		for _, p := range c.order {
			if !p.earliest.IsZero() {
				soon(p.earliest)
			}
			if now.Before(p.holdUntil) {
				soon(p.holdUntil)
			}
		}
		soon(now.Add(c.e.cfg.Poll))
	}
	if t := c.cfg.InactiveThreshold; t > 0 && len(c.waiting) == 0 {
		if !now.Before(c.lastActive.Add(t)) {
			return next, true
		}
		soon(c.lastActive.Add(t))
	}
	return next, false
}
