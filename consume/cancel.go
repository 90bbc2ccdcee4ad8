package consume

import (
	"context"
	"sync"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
)

// popLinger is how long a pop that named a request id is remembered after
// it answered (a cancel from a requester that lost the answer still
// releases what it delivered), and how long a cancel that found no pop is
// remembered (the pop it names may arrive after it: the two travel on
// different subjects).
const popLinger = 30 * time.Second

// maxPendingPops and maxPendingBytes bound the remembered pops and cancels
// (count, and the transactionIds kept for a late cancel); past either the
// oldest of those that answered are forgotten first. A lost answer's
// cancel comes right after it: at thousands of pops a second these still
// keep the last few seconds.
const (
	maxPendingPops  = 1 << 14
	maxPendingBytes = 8 << 20
)

type pendingKey struct {
	tenant tenancy.TenantID
	id     string
}

// pendingPop is one pop that named a request id, or a cancel that came
// first.
type pendingPop struct {
	cancel    context.CancelFunc // nil for a cancel that came first
	cancelled bool
	claims    []claim   // delivered and not handed back: what a late cancel releases
	cost      int       // what claims hold, in pendingPops.bytes
	until     time.Time // zero while the pop runs; then when it is forgotten
}

// pendingPops are the pops a cancel may reach. The pops' goroutines and
// the cancels' handlers reach them at once, hence the lock; it is held for
// map and slice work only, never across a database call.
type pendingPops struct {
	mu    sync.Mutex
	byKey map[pendingKey]*pendingPop
	order []pendingKey // entries with an expiry, oldest first (a key may repeat; sweep checks)
	bytes int          // the entries' costs
}

// popTicket is a registered pop's handle; nil for a pop without a request
// id (its methods then do nothing).
type popTicket struct {
	pops *pendingPops
	key  pendingKey
}

// begin registers a pop that names id under a context a cancel ends. A
// cancel that came first ends it at once; an id in use is refused.
func (p *pendingPops) begin(ctx context.Context, tenant tenancy.TenantID, id string) (context.Context, *popTicket, error) {
	if id == "" {
		return ctx, nil, nil
	}
	k := pendingKey{tenant: tenant, id: id}
	ctx, cancel := context.WithCancel(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sweep(time.Now())
	if e, ok := p.byKey[k]; ok {
		if e.cancel == nil && e.cancelled { // its cancel came first
			e.cancel, e.until = cancel, time.Time{}
			cancel()
			return ctx, &popTicket{pops: p, key: k}, nil
		}
		cancel()
		return ctx, nil, jsonapi.Badf("requestId %q is in use by another pop: it must be unique per pop", id)
	}
	p.byKey[k] = &pendingPop{cancel: cancel}
	return ctx, &popTicket{pops: p, key: k}, nil
}

// delivered records what a pop is about to answer; false when its cancel
// came meanwhile: the caller then releases it, and does not answer.
func (t *popTicket) delivered(claims []claim) bool {
	if t == nil {
		return true
	}
	t.pops.mu.Lock()
	defer t.pops.mu.Unlock()
	e := t.pops.byKey[t.key]
	if e == nil || e.cancelled {
		return false
	}
	e.claims, e.cost = claims, claimsCost(claims)
	t.pops.bytes += e.cost
	return true
}

// claimsCost is what remembering claims holds, about.
func claimsCost(claims []claim) int {
	n := 0
	for i := range claims {
		n += 128 + len(claims[i].partition) + len(claims[i].queue) + len(claims[i].group)
		for _, id := range claims[i].txids {
			n += 16 + len(id)
		}
	}
	return n
}

// finish ends the pop's context and keeps the entry for popLinger.
func (t *popTicket) finish() {
	if t == nil {
		return
	}
	t.pops.mu.Lock()
	defer t.pops.mu.Unlock()
	if e := t.pops.byKey[t.key]; e != nil {
		e.cancel()
		now := time.Now()
		e.until = now.Add(popLinger)
		t.pops.order = append(t.pops.order, t.key)
		t.pops.sweep(now)
	}
}

// cancel ends the pop named id: a parked pop stops (and releases what it
// claimed meanwhile itself); what an answered pop delivered is returned for
// the caller to release. known is false when no pop of that id is here
// (yet): the cancel is remembered for one that arrives later.
func (p *pendingPops) cancel(tenant tenancy.TenantID, id string) (known bool, release []claim) {
	k := pendingKey{tenant: tenant, id: id}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	p.sweep(now)
	e, ok := p.byKey[k]
	if !ok {
		p.byKey[k] = &pendingPop{cancelled: true, until: now.Add(popLinger)}
		p.order = append(p.order, k)
		return false, nil
	}
	known = e.cancel != nil
	if !e.cancelled {
		e.cancelled = true
		if e.cancel != nil {
			e.cancel()
		}
	}
	release, e.claims = e.claims, nil
	p.bytes -= e.cost
	e.cost = 0
	return known, release
}

// sweep forgets entries whose time is up, and the oldest that answered
// while they are too many or hold too much. Called with p.mu held.
func (p *pendingPops) sweep(now time.Time) {
	for len(p.order) > 0 {
		k := p.order[0]
		e := p.byKey[k]
		switch {
		case e == nil || e.until.IsZero(): // forgotten already, or running again
		case now.After(e.until) || len(p.byKey) > maxPendingPops || p.bytes > maxPendingBytes:
			p.bytes -= e.cost
			delete(p.byKey, k)
		default:
			return
		}
		p.order = p.order[1:]
	}
}

// CancelPop ends the pop that named requestID (<prefix>.v1.pop.cancel): a
// parked pop answers nothing more and releases whatever it claimed, and
// the deliveries of one that already answered (the requester lost the
// answer) are handed back. known reports whether the pop was here; a
// cancel of a pop not seen yet is remembered for popLinger, so that the
// pop, arriving late, claims nothing.
func (c *Consumer) CancelPop(ctx context.Context, tenant tenancy.TenantID, requestID string) (known bool, err error) {
	known, claims := c.pending.cancel(tenant, requestID)
	if known {
		c.cancels.Add(1)
	}
	if len(claims) > 0 {
		err = c.release(ctx, claims)
	}
	return known, err
}

// requesterGone releases what a pop delivered when nobody will read its
// answer: its context ended (an HTTP client gone, a cancel came) or its
// requester's wait passed (late). Otherwise a pop that named a request id
// keeps what it delivered for a cancel from a requester that loses the
// answer. claimAcked says the claim itself moved the cursor (auto-ack);
// a pop that acknowledges once its answer is rendered (an auto-ack pop of
// a sealed queue) is handed back as a lease now, and recorded for a late
// cancel as auto-acknowledged, which is what it is once answered.
func (c *Consumer) requesterGone(ctx context.Context, tenant tenancy.TenantID, req jsonapi.PopRequest, claimAcked bool, got Popped, t *popTicket, late bool) (int, []byte, bool) {
	if ctx.Err() == nil && !late && t == nil {
		return 0, nil, false
	}
	if ctx.Err() == nil && !late && t.delivered(claimsOf(tenant, req.Queue, req.ConsumerGroup, req.AutoAck, got)) {
		return 0, nil, false
	}
	claims := claimsOf(tenant, req.Queue, req.ConsumerGroup, claimAcked, got)
	msg := "the requester left before the answer: what the pop claimed was handed back"
	if err := c.release(ctx, claims); err != nil {
		msg += " (" + err.Error() + ")"
	}
	return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, msg), true
}
