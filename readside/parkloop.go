package readside

import (
	"context"
	"fmt"
	"time"
)

// lookParked runs look until it finds something. With a wait and nothing
// found it parks on k, costing no query, until a push to k is announced
// (here or by a peer), the wait ends, Stop or Unpark, or its queue is
// deleted (Reads.Dropped: it answers at once, empty), then looks again. It
// parks before its second look, so a push that lands between the first look
// and the wait still wakes it.
//
// A wake that finds nothing (announcements for messages below what the
// caller asks for, or announcements nobody's push caused) makes the next
// wake wait a little: minSettle, doubling per empty wake up to maxSettle,
// wakes meanwhile coalescing into one. So a parked caller queries at most a
// few times a second however many announcements arrive, while a wake that
// finds something answers at once. what names the call in the error of an
// abandoned context.
func lookParked[T any](r *Reads, ctx context.Context, k Key, wait time.Duration, what string, look func() (T, bool, error)) (T, error) {
	var none T
	deadline := time.Now().Add(wait)
	var wake *waiter
	var timer *time.Timer
	var settle time.Duration // wait before heeding the next wake; grows with empty wakes
	defer func() {
		if wake != nil {
			r.parked.unpark(k, wake)
		}
		if timer != nil {
			timer.Stop()
		}
	}()
	abandoned := func() (T, error) { return none, fmt.Errorf("%s abandoned: %w", what, ctx.Err()) }
	for {
		if wake != nil && wake.gone.Load() {
			return none, nil // the queue was deleted (Reads.Dropped)
		}
		v, found, err := look()
		if err != nil || found || wait == 0 || !time.Now().Before(deadline) || r.leaving() {
			return v, err
		}
		if wake == nil {
			wake = r.parked.park(k)
			timer = time.NewTimer(time.Until(deadline))
			continue
		}
		if settle > 0 {
			pause := time.NewTimer(settle)
			select {
			case <-pause.C:
			case <-timer.C:
				pause.Stop()
				return none, nil
			case <-r.quit:
				pause.Stop()
				return none, nil
			case <-r.leave:
				pause.Stop()
				return none, nil
			case <-ctx.Done():
				pause.Stop()
				return abandoned()
			}
		}
		select {
		case <-wake.ch:
			if wake.gone.Load() {
				return none, nil
			}
			settle = min(max(2*settle, minSettle), maxSettle) // reset by returning: a wake that finds something ends the call
		case <-timer.C:
			return none, nil
		case <-r.quit:
			return none, nil
		case <-r.leave:
			return none, nil
		case <-ctx.Done():
			return abandoned()
		}
	}
}
