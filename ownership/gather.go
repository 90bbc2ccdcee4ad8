package ownership

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// Forwards that share a message: groups bound for one owner (of one
// tenant) from concurrent requests travel in one forward message and come
// back in one answer.
//
// The rule, per owner and tenant: a forward leaves at once when none left
// for that owner within the last Gather; otherwise the groups wait in the
// outbox until Gather after the last one left, and everything gathered
// goes together. A lone push never waits; under load one message leaves
// per owner per Gather at most.

// maxGathered sends an outbox at once when it holds this many groups, so
// that one forward message stays well under NATS's payload limit.
const maxGathered = 512

// pendingForward is one request's groups waiting in an outbox.
type pendingForward struct {
	groups []Group
	done   func([]Answer, error)
}

// outboxKey names an outbox: forwards of one tenant to one owner.
type outboxKey struct {
	owner  string
	tenant tenancy.TenantID
}

// outbox gathers the groups bound for one owner.
type outbox struct {
	key outboxKey
	// mu guards the rest: push calls add, the gather timer's goroutine
	// takes.
	mu      sync.Mutex
	pending []pendingForward
	groups  int       // in pending
	armed   bool      // a timer will send pending
	last    time.Time // when the last forward to this owner left
}

// ForwardAsync sends groups to their owner and calls done once with one
// answer per group in order, or an error. It never blocks: the forward
// leaves from a goroutine of its own, which belongs to the requests whose
// groups it carries and ends within ForwardTimeout, when done has run.
// On an error, and for every Refused answer, the caller writes the group
// itself (counted here as a fallback); such a group may have reached the
// owner, so it must not skip the probe.
func (r *Router) ForwardAsync(owner string, tenant tenancy.TenantID, groups []Group, done func([]Answer, error)) {
	r.forwarded.Add(uint64(len(groups)))
	p := pendingForward{groups: groups, done: done}
	if r.cfg.Gather <= 0 {
		go r.send(outboxKey{owner, tenant}, []pendingForward{p}, len(groups))
		return
	}
	ob := r.outboxOf(outboxKey{owner, tenant})
	ob.mu.Lock()
	now := time.Now()
	if !ob.armed && now.Sub(ob.last) >= r.cfg.Gather {
		ob.last = now
		ob.mu.Unlock()
		go r.send(ob.key, []pendingForward{p}, len(groups))
		return
	}
	ob.pending = append(ob.pending, p)
	ob.groups += len(groups)
	if ob.groups >= maxGathered {
		batch, n := ob.take(now)
		ob.mu.Unlock()
		go r.send(ob.key, batch, n)
		return
	}
	if !ob.armed {
		ob.armed = true
		time.AfterFunc(r.cfg.Gather-now.Sub(ob.last), func() { r.flush(ob) })
	}
	ob.mu.Unlock()
}

// take empties the outbox; ob.mu is held.
func (ob *outbox) take(now time.Time) ([]pendingForward, int) {
	batch, n := ob.pending, ob.groups
	ob.pending, ob.groups, ob.last = nil, 0, now
	return batch, n
}

// flush runs on the gather timer's goroutine: it sends what the outbox
// gathered, there.
func (r *Router) flush(ob *outbox) {
	ob.mu.Lock()
	ob.armed = false
	if len(ob.pending) == 0 { // sent early, full
		ob.mu.Unlock()
		return
	}
	batch, n := ob.take(time.Now())
	ob.mu.Unlock()
	r.send(ob.key, batch, n)
}

// outboxOf finds or makes the outbox of key.
func (r *Router) outboxOf(key outboxKey) *outbox {
	r.outboxMu.Lock()
	defer r.outboxMu.Unlock()
	ob := r.outboxes[key]
	if ob == nil {
		ob = &outbox{key: key}
		r.outboxes[key] = ob
	}
	return ob
}

// pruneOutboxes drops the outboxes of bridges that are no longer members.
// One that still gathers keeps its timer, which sends what it holds.
func (r *Router) pruneOutboxes(members []string) {
	r.outboxMu.Lock()
	defer r.outboxMu.Unlock()
	for key := range r.outboxes {
		if !containsString(members, key.owner) {
			delete(r.outboxes, key)
		}
	}
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// send carries batch (n groups) to its owner as one request and hands each
// request its answers.
func (r *Router) send(key outboxKey, batch []pendingForward, n int) {
	groups := batch[0].groups
	if len(batch) > 1 {
		groups = make([]Group, 0, n)
		for _, p := range batch {
			groups = append(groups, p.groups...)
		}
	}
	r.forwardRequests.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.ForwardTimeout)
	defer cancel()
	start := time.Now()
	reply, err := r.cfg.NATS.RequestWithContext(ctx, ForwardSubject(r.cfg.Prefix, key.owner), appendRequest(nil, key.tenant, groups))
	var answers []Answer
	if err == nil {
		answers, err = decodeAnswer(reply.Data, groups)
	}
	if err != nil {
		r.fallback.Add(uint64(n))
		err = fmt.Errorf("ownership: forward to %s: %w", key.owner, err)
		for _, p := range batch {
			p.done(nil, err)
		}
		return
	}
	if r.cfg.OnForward != nil {
		r.cfg.OnForward(time.Since(start))
	}
	for _, a := range answers {
		if a.Refused {
			r.fallback.Add(1)
		}
	}
	for _, p := range batch {
		p.done(answers[:len(p.groups):len(p.groups)], nil)
		answers = answers[len(p.groups):]
	}
}

// Forward is ForwardAsync that waits for the answers.
func (r *Router) Forward(ctx context.Context, owner string, tenant tenancy.TenantID, groups []Group) ([]Answer, error) {
	type outcome struct {
		answers []Answer
		err     error
	}
	got := make(chan outcome, 1)
	r.ForwardAsync(owner, tenant, groups, func(a []Answer, err error) { got <- outcome{a, err} })
	select {
	case o := <-got:
		return o.answers, o.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
