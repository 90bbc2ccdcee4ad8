package main

import (
	"context"
	"fmt"
	"io"
	"time"

	js "github.com/nats-io/nats.go/jetstream"
)

// jsPhase runs the phases of a JetStream consumer mode: publishing, and
// consuming what is left; a line a second on the way.
type jsPhase struct {
	ctx   context.Context
	o     options
	pubs  *jsPublishers
	cons  *jsConsumers // nil in the push mode
	meter *meter
	out   io.Writer
	late  *lateness // the timetable's, when there is one

	start         time.Time
	lastP, lastC  int64
	lastPrintedAt time.Time
}

// publish runs the publishers, saturating for -duration (or up to their
// limit) or on r's timetable, until the last ack: r's pushed, pushTime and
// pushCPU (per pushed message).
func (ph *jsPhase) publish(r *jsResult) {
	before := ph.meter.sample()
	start := time.Now()
	var stop context.Context
	var cancel context.CancelFunc
	if ph.pubs.stopAfterLimit > 0 { // a backlog of a number of messages, however long it takes
		stop, cancel = context.WithCancel(ph.ctx)
	} else {
		stop, cancel = context.WithDeadline(ph.ctx, start.Add(ph.o.duration))
	}
	defer cancel()
	var sch *schedule
	if r.asked > 0 {
		sch, _ = newSchedule(r.asked, 1, start, ph.o.duration) // r.asked > 0: no error
		ph.late = &lateness{}
	}
	ph.begin(start)
	done := ph.pubs.run(ph.ctx, stop, sch, ph.late)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-tick.C:
			ph.line()
		}
	}
	r.pushTime = time.Since(start)
	r.pushed = ph.pubs.acked.Load()
	r.pushCPU = ph.meter.sample().minus(before).perItem(r.pushed)
}

// drain starts the consumers on the backlog and times them from their
// first pull to the last message's first delivery: r's consumed,
// consumeTime and cpu (per consumed message).
func (ph *jsPhase) drain(r *jsResult, handles []js.Consumer) error {
	before := ph.meter.sample()
	start := time.Now()
	ph.begin(start)
	if err := ph.cons.consume(handles, ph.o.jsc.pullMax); err != nil {
		return err
	}
	if err := ph.rest(r.pushed); err != nil {
		return err
	}
	r.consumeTime = time.Since(start)
	r.consumed, _ = ph.cons.seen.counts()
	r.cpu = ph.meter.sample().minus(before).perItem(r.consumed)
	return nil
}

// live runs consumers and publishers at once: the figures are the
// publishing's (CPU per pushed + consumed message); then the consumers
// take what is left, so that every message is seen received.
func (ph *jsPhase) live(r *jsResult, handles []js.Consumer) error {
	ph.cons.timing.Store(true)
	if err := ph.cons.consume(handles, ph.o.jsc.pullMax); err != nil {
		return err
	}
	before := ph.meter.sample()
	ph.publish(r)
	r.consumed, _ = ph.cons.seen.counts()
	r.consumeTime = r.pushTime
	r.cpu = ph.meter.sample().minus(before).perItem(r.pushed + r.consumed)
	left, start := r.pushed-r.consumed, time.Now()
	if err := ph.rest(r.pushed); err != nil {
		return err
	}
	fmt.Fprintf(ph.out, "after      the publishing: %d left, consumed in %s\n", max(left, 0), time.Since(start).Round(time.Millisecond))
	return nil
}

// rest waits until the consumers have seen want messages, and fails when
// they see none for -stall meanwhile (a target that parks pulls and never
// answers them, or answers none at all, ends the run instead of hanging it).
func (ph *jsPhase) rest(want int64) error {
	poll := time.NewTicker(2 * time.Millisecond) // the drain's end is timed by it
	defer poll.Stop()
	last, moved := int64(-1), time.Now()
	for {
		got, _ := ph.cons.seen.counts()
		if got >= want {
			return nil
		}
		if got != last {
			last, moved = got, time.Now()
		} else if time.Since(moved) > ph.o.jsc.stall {
			err := fmt.Errorf("the consumers received nothing for %s with %d of %d messages consumed", ph.o.jsc.stall, got, want)
			if first := ph.cons.err(); first != nil {
				err = fmt.Errorf("%w (the first consumer error: %v)", err, first)
			}
			return err
		}
		select {
		case <-ph.ctx.Done():
			return ph.ctx.Err()
		case <-poll.C:
		}
		if time.Since(ph.lastPrintedAt) >= time.Second {
			ph.line()
		}
	}
}

// begin starts the progress lines' clock.
func (ph *jsPhase) begin(start time.Time) {
	ph.start, ph.lastPrintedAt = start, start
	ph.lastP = ph.pubs.acked.Load()
	ph.lastC = 0
	if ph.cons != nil {
		ph.lastC, _ = ph.cons.seen.counts()
	}
}

// line prints the last second's pushed and consumed messages and the
// consumers' lag.
func (ph *jsPhase) line() {
	p, errs := ph.pubs.acked.Load(), ph.pubs.failed.Load()
	if ph.cons == nil {
		fmt.Fprintf(ph.out, "%5.0fs  pushed %8d/s  errors %d\n", time.Since(ph.start).Seconds(), p-ph.lastP, errs)
		ph.lastP, ph.lastPrintedAt = p, time.Now()
		return
	}
	c, _ := ph.cons.seen.counts()
	errs += ph.cons.failed.Load()
	fmt.Fprintf(ph.out, "%5.0fs  pushed %8d/s  consumed %8d/s  lag %8d  errors %d\n", time.Since(ph.start).Seconds(), p-ph.lastP, c-ph.lastC,
		max(p-c, 0), errs)
	ph.lastP, ph.lastC, ph.lastPrintedAt = p, c, time.Now()
}
