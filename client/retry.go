package client

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// backoff is the pause between attempts: doubling from MinBackoff up to
// MaxBackoff, each pause drawn from the upper half of the current step, so
// that the clients a bridge restart cut off do not all come back at once.
type backoff struct{ step, max time.Duration }

func (c *Client) newBackoff() backoff { return backoff{step: c.cfg.MinBackoff, max: c.cfg.MaxBackoff} }

// next is the pause before the next attempt.
func (b *backoff) next() time.Duration {
	wait := b.step/2 + rand.N(b.step/2+1)
	b.step = min(2*b.step, b.max)
	return wait
}

// retry paces the attempts of one request (a push, a transaction) within
// the retry budget.
type retry struct {
	c        *Client
	deadline time.Time
	b        backoff
}

func (c *Client) newRetry() *retry {
	return &retry{c: c, deadline: time.Now().Add(c.cfg.RetryBudget), b: c.newBackoff()}
}

// pause waits before the attempt after attempt, which failed with err. It
// returns an error when there is to be none: the context's, or ErrGaveUp
// when the pause would end past the budget.
func (r *retry) pause(ctx context.Context, attempt int, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	wait := r.b.next()
	if time.Now().Add(wait).After(r.deadline) {
		return fmt.Errorf("%w after %d attempts: %v", ErrGaveUp, attempt+1, err)
	}
	if r.c.cfg.OnRetry != nil {
		r.c.cfg.OnRetry(attempt, err)
	}
	select {
	case <-time.After(wait):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
