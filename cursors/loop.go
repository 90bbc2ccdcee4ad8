package cursors

import (
	"context"
	"time"
)

// run is the consumer's goroutine: it takes new commits, expires requests
// and sends heartbeats, fills the parked requests (reading PostgreSQL for
// what memory does not hold), and sleeps until the next deadline or a
// kick (a pull, an ack, a commit). It ends on stop, or after deleting a
// consumer idle past its inactive threshold.
func (c *consumer) run() {
	defer c.e.bg.Done()
	defer close(c.done)
	clock := c.e.cfg.Clock
	var lastPoll, lastTouch, lastWant time.Time
	var settled []chan struct{}
	retry := false
	for {
		if self, _ := c.e.cfg.Owner(c.key.tenant, c.key.stream, "$js."+c.key.name); !self {
			// Ownership moved (bridges came or went): the new owner loads
			// the consumer; requests parked here pull again there at once.
			c.e.forget(c)
			c.stop(descLeadership, 409, false)
			return
		}
		c.takeHot()
		if now := clock.Now(); now.Sub(lastWant) >= wantEvery {
			// The hot tail keeps the queue's commits while it is consumed.
			lastWant = now
			c.e.cfg.Tail.Want(c.key.tenant, c.key.stream)
		}
		look := c.freshNoWait()
		c.refreshParts()
		now := clock.Now()
		c.mu.Lock()
		if len(c.waiting) > 0 && (look || retry || !now.Before(lastPoll.Add(c.e.cfg.Poll))) {
			// The backstop for commits of other bridges that no
			// announcement reported: look once per Poll while requests wait.
			lastPoll = now
			for _, p := range c.order {
				p.maybeMore = true
			}
		}
		c.timers(now)
		c.mu.Unlock()
		more, err := c.fill(now)
		retry = err != nil
		if more {
			c.wake() // the pass ended with more to read: go on after the timers
		}
		c.mu.Lock()
		next, idle := c.timers(clock.Now())
		touch := c.touched && now.Sub(lastTouch) >= touchEvery
		if touch {
			c.touched, lastTouch = false, now
		}
		c.mu.Unlock()
		if touch {
			c.touch()
		}
		if idle && c.e.dropIdle(c) {
			return
		}
		if retry {
			next = now.Add(retryPause)
		}
		for _, ch := range settled {
			close(ch)
		}
		settled = settled[:0]
		var timer <-chan time.Time
		if !next.IsZero() {
			timer = clock.At(next)
		}
		select {
		case <-c.quit:
			return
		case <-c.kick:
		case <-timer:
		case ch := <-c.settle:
			settled = append(settled, ch)
		}
	}
}

const (
	// touchEvery: a consumer in use records its activity this often, for
	// inactive thresholds seen from other bridges.
	touchEvery = 30 * time.Second
	// wantEvery: a live consumer tells the hot tail its queue is consumed
	// this often (the tail forgets a queue after wantFor).
	wantEvery = time.Minute
	// retryPause: after a failed read the consumer tries again so much later.
	retryPause = 100 * time.Millisecond
)

// fill delivers until the requests are served or nothing more can be
// read; then no_wait requests left over get 404 No Messages (or wait
// for their expiry when they have one and got nothing yet), as from
// nats-server at the end of the stream.
func (c *consumer) fill(now time.Time) (more bool, err error) {
	for round := 0; round < maxReadsPerPass; round++ {
		c.mu.Lock()
		ranges := c.deliver(now)
		if len(ranges) == 0 {
			c.endOfStream()
			c.mu.Unlock()
			return false, nil
		}
		c.mu.Unlock()
		if err := c.read(ranges); err != nil {
			c.e.cfg.Logger.Warn().Err(err).Msg("read for parked pulls failed; trying again")
			return false, err
		}
	}
	return true, nil
}

// maxReadsPerPass bounds the reads of one pass, so that timers (expiry,
// heartbeats) keep their time while a filter passes over a long backlog.
const maxReadsPerPass = 16

// endOfStream answers the no_wait requests nothing more can serve now.
// Under mu.
func (c *consumer) endOfStream() {
	for i := 0; i < len(c.waiting); {
		r := c.waiting[i]
		if r.noWait && !r.unheard && (r.expires.IsZero() || r.delivered > 0) {
			c.status(r, 404, descNoMessages, false)
			c.unpark(i)
			c.e.stats.noMessages.Add(1)
			continue
		}
		i++
	}
}

// freshNoWait reports whether a no_wait request came since the last pass;
// if so, the partitions are read from the Store again (refreshParts) and
// every partition is looked at, so that what was committed before the
// request (its PubAck already answered) is found, as on JetStream, even
// when this bridge's memory has not heard of it yet.
func (c *consumer) freshNoWait() bool {
	c.mu.Lock()
	fresh := false
	for _, r := range c.waiting {
		if r.noWait && !r.looked {
			r.looked, fresh = true, true
		}
	}
	c.mu.Unlock()
	if fresh {
		c.hotMu.Lock()
		c.refresh = true
		c.hotMu.Unlock()
	}
	return fresh
}

// refreshParts adds partitions made after the consumer was loaded, when
// a commit named one (or a no_wait request asked to look), and moves the
// known partitions' last offsets up to the Store's.
func (c *consumer) refreshParts() {
	c.hotMu.Lock()
	need := c.refresh
	c.refresh = false
	c.hotMu.Unlock()
	if !need {
		return
	}
	var parts []PartitionState
	err := c.e.call(func(ctx context.Context) error {
		var err error
		parts, err = c.e.cfg.Store.ConsumerPartitions(ctx, c.id)
		return err
	})
	if err != nil {
		c.e.cfg.Logger.Warn().Err(err).Str("consumer", c.key.name).Msg("partitions not read; trying again with the next commit")
		return
	}
	c.merge(parts)
}

// touch records the consumer's activity in the Store.
func (c *consumer) touch() {
	err := c.e.call(func(ctx context.Context) error { return c.e.cfg.Store.TouchConsumers(ctx, []int64{c.id}) })
	if err != nil {
		c.e.cfg.Logger.Warn().Err(err).Str("consumer", c.key.name).Msg("activity not recorded")
	}
}

// stop ends the consumer: each parked request gets the status (408 with
// its pending headers at shutdown, 409 Consumer Deleted on delete), and
// its goroutine returns. Idempotent.
func (c *consumer) stop(desc string, code int, withPending bool) {
	c.mu.Lock()
	if c.stopping {
		c.mu.Unlock()
		return
	}
	c.stopping = true
	for len(c.waiting) > 0 {
		c.status(c.waiting[0], code, desc, withPending)
		c.unpark(0)
	}
	c.mu.Unlock()
	close(c.quit)
}

// dropIdle deletes a consumer idle past its inactive threshold; false
// when a request came meanwhile.
func (e *JSEngine) dropIdle(c *consumer) bool {
	c.mu.Lock()
	if len(c.waiting) > 0 || c.stopping {
		c.mu.Unlock()
		return c.stopping
	}
	c.stopping, c.deleted = true, true
	c.mu.Unlock()
	e.forget(c)
	err := e.call(func(ctx context.Context) error {
		_, err := e.cfg.Store.DeleteConsumer(ctx, c.key.tenant, c.key.stream, c.key.name)
		return err
	})
	if err != nil {
		e.cfg.Logger.Warn().Err(err).Str("consumer", c.key.name).Msg("inactive consumer not deleted")
	}
	return true
}
