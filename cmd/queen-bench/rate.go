package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// The open-loop push side (-rate N): requests leave on a timetable, not as
// fast as answers come back. A closed loop slows down with the system it
// measures, so a stall shows as fewer requests instead of as waiting
// (coordinated omission); on a timetable the stall shows in the
// latencies, which are measured from each request's scheduled time.

// schedule is the timetable of the whole push side: request n is due at
// start + n×interval, where interval = -items / -rate. Whichever client is
// free takes the next request, so a request is late only when every
// client is still busy at its due time.
type schedule struct {
	start    time.Time
	interval float64 // seconds between two requests of the push side
	end      time.Time
	next     atomic.Int64
}

// newSchedule spreads rate items a second, in requests of items, over
// [start, start+d).
func newSchedule(rate float64, items int, start time.Time, d time.Duration) (*schedule, error) {
	if rate <= 0 || items < 1 {
		return nil, fmt.Errorf("-rate must be positive and -items at least 1")
	}
	return &schedule{start: start, interval: float64(items) / rate, end: start.Add(d)}, nil
}

// due is when request n is due.
func (s *schedule) due(n int64) time.Time {
	return s.start.Add(time.Duration(float64(n) * s.interval * float64(time.Second)))
}

// take hands out the next request: its number and due time; ok is false
// once the timetable is over.
func (s *schedule) take() (n int64, due time.Time, ok bool) {
	n = s.next.Add(1) - 1
	due = s.due(n)
	return n, due, due.Before(s.end)
}

// wait sleeps until due and answers how late the request was taken (0:
// on time) and false when ctx ended first.
func wait(ctx context.Context, due time.Time) (late time.Duration, ok bool) {
	d := time.Until(due)
	if d <= 0 {
		return -d, ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return 0, true
	case <-ctx.Done():
		return 0, false
	}
}

// timetable starts a push side at start: its deadline (new requests stop
// there; one in flight finishes on ctx), and with -rate its schedule.
func timetable(ctx context.Context, o options, start time.Time) (context.Context, context.CancelFunc, *schedule, error) {
	var sch *schedule
	if o.rate > 0 {
		var err error
		if sch, err = newSchedule(o.rate, o.items, start, o.duration); err != nil {
			return nil, nil, nil, err
		}
	}
	pushing, stop := context.WithDeadline(ctx, start.Add(o.duration))
	return pushing, stop, sch, nil
}

// next is a client's next request: its number and the time its latency
// counts from. In a closed loop (sch nil) that is request i now, until
// stop ends; on a timetable it is the next request due, once due (ok
// false when the timetable is over or ctx ended), and late records how
// far behind it was taken.
func next(ctx, stop context.Context, i int, sch *schedule, late *lateness) (n int64, from time.Time, ok bool) {
	if sch == nil {
		return int64(i), time.Now(), stop.Err() == nil
	}
	n, due, ok := sch.take()
	if !ok {
		return 0, time.Time{}, false
	}
	behind, ok := wait(ctx, due)
	if !ok {
		return 0, time.Time{}, false
	}
	late.record(behind)
	return n, due, true
}

// lateAfter is how far behind its due time a request counts as late: a
// client busy with an earlier request, not a timer's or a goroutine's
// start-up jitter of some microseconds. The latencies count every delay.
const lateAfter = time.Millisecond

// lateness counts the requests sent late, because every client was busy
// when they fell due.
type lateness struct {
	mu         sync.Mutex
	sent, late int64
	mostBehind time.Duration
}

func (l *lateness) record(behind time.Duration) {
	l.mu.Lock()
	l.sent++
	if behind > lateAfter {
		l.late++
	}
	l.mostBehind = max(l.mostBehind, behind)
	l.mu.Unlock()
}

func (l *lateness) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("%d of %d requests sent more than %s after their scheduled time (the latest %s behind)", l.late, l.sent, lateAfter,
		l.mostBehind.Round(10*time.Microsecond))
}

// quantiles sorts l and answers its p50, p99 and maximum (0s when empty).
func quantiles(l []time.Duration) (p50, p99, top time.Duration) {
	if len(l) == 0 {
		return 0, 0, 0
	}
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	return l[len(l)/2], l[len(l)*99/100], l[len(l)-1]
}
