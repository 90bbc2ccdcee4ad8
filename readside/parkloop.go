package readside

import (
	"context"
	"fmt"
	"time"
)

// Parking is one parked read or pop (Reads.Park). Its caller looks, and
// after each look that found nothing asks Again whether to look again;
// Close ends it. Only the caller's goroutine uses it. The read side never
// calls back into its caller: the caller runs the loop, so that a pop's
// walk goes down only (consume → readside), never back up.
//
// Again parks on the key before the second look, costing no query, until a
// push to the key is announced (here or by a peer), the wait ends, Stop or
// Unpark, or its queue is deleted (Reads.Dropped: it answers at once,
// empty). Parking before the second look means a push that lands between
// the first look and the wait still wakes it.
//
// A wake that finds nothing (announcements for messages below what the
// caller asks for, or announcements nobody's push caused) makes the next
// wake wait a little: minSettle, doubling per empty wake up to maxSettle,
// wakes meanwhile coalescing into one. So a parked caller queries at most a
// few times a second however many announcements arrive, while a wake that
// finds something answers at once (the caller stops asking).
type Parking struct {
	r        *Reads
	ctx      context.Context
	k        Key
	wait     time.Duration
	deadline time.Time
	what     string // names the call in the error of an abandoned context
	wake     *waiter
	timer    *time.Timer
	settle   time.Duration // wait before heeding the next wake; grows with empty wakes
}

// Park starts a parked look on k (partition "": the whole queue, as an
// any-partition pop parks) for up to wait; what names the call ("read",
// "pop") in the error of an abandoned context. Nothing is parked until
// the first Again.
func (r *Reads) Park(ctx context.Context, k Key, wait time.Duration, what string) Parking {
	return Parking{r: r, ctx: ctx, k: k, wait: wait, deadline: time.Now().Add(wait), what: what}
}

// Again is asked after a look that found nothing: true when the caller
// should look again now; false when it answers what it has (nothing), with
// an error naming the call and wrapping the context's when the caller's
// context ended.
func (p *Parking) Again() (bool, error) {
	if p.wait == 0 || !time.Now().Before(p.deadline) || p.r.leaving() {
		return false, nil
	}
	if p.wake == nil {
		p.wake = p.r.parked.park(p.k)
		p.timer = time.NewTimer(time.Until(p.deadline))
		return !p.wake.gone.Load(), nil // the queue was deleted (Reads.Dropped)
	}
	r := p.r
	if p.settle > 0 {
		pause := time.NewTimer(p.settle)
		select {
		case <-pause.C:
		case <-p.timer.C:
			pause.Stop()
			return false, nil
		case <-r.quit:
			pause.Stop()
			return false, nil
		case <-r.leave:
			pause.Stop()
			return false, nil
		case <-p.ctx.Done():
			pause.Stop()
			return false, p.abandoned()
		}
	}
	select {
	case <-p.wake.ch:
		if p.wake.gone.Load() {
			return false, nil
		}
		p.settle = min(max(2*p.settle, minSettle), maxSettle) // reset by the next Park: a wake that finds something ends the call
		return true, nil
	case <-p.timer.C:
		return false, nil
	case <-r.quit:
		return false, nil
	case <-r.leave:
		return false, nil
	case <-p.ctx.Done():
		return false, p.abandoned()
	}
}

func (p *Parking) abandoned() error { return fmt.Errorf("%s abandoned: %w", p.what, p.ctx.Err()) }

// Close unparks. Idempotent.
func (p *Parking) Close() {
	if p.wake != nil {
		p.r.parked.unpark(p.k, p.wake)
		p.wake = nil
	}
	if p.timer != nil {
		p.timer.Stop()
	}
}

// lookParked runs look until it finds something, parking between looks
// (Parking) on k for up to wait: a read's loop.
func lookParked[T any](r *Reads, ctx context.Context, k Key, wait time.Duration, what string, look func() (T, bool, error)) (T, error) {
	p := r.Park(ctx, k, wait, what)
	defer p.Close()
	for {
		v, found, err := look()
		if err != nil || found {
			return v, err
		}
		if again, err := p.Again(); !again {
			return v, err
		}
	}
}
