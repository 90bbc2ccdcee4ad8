package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// The consume mode (-consumers N): producers push as in the bridge target
// while N consumers of each of -groups groups pop (any partition,
// -consume-batch, a long-poll wait) and acknowledge each batch in one
// request, over the same transport. It reports pushed and consumed
// items/s, the lag of the slowest group (items pushed and not yet
// acknowledged) every second, push-to-delivery latency (each request's
// payloads carry its send time, or with -rate its scheduled time), and CPU
// per item and per delivery of the bridge, PostgreSQL and queen-bench.
// With -consume-only nothing is pushed: every group drains what earlier
// runs left, and the CPU is per consumed item.

// consumeStats is shared by producers and consumers (atomics, and a
// mutex-guarded latency list).
type consumeStats struct {
	pushed, pops, emptyPops, errors atomic.Int64
	groups                          *groupCounts
	mu                              sync.Mutex
	delivery                        []time.Duration
	firstErr                        error
}

func (s *consumeStats) fail(err error) {
	s.errors.Add(1)
	s.mu.Lock()
	if s.firstErr == nil {
		s.firstErr = err
	}
	s.mu.Unlock()
}

// checkConsume refuses what the consume mode cannot run.
func checkConsume(o options) error {
	switch {
	case o.target != "bridge":
		return fmt.Errorf("-consumers needs -target bridge")
	case o.consumeBatch < 1 || o.consumePartitions < 1 || o.groups < 1:
		return fmt.Errorf("-consume-batch, -consume-partitions and -groups must be at least 1")
	case o.rate < 0:
		return fmt.Errorf("-rate must not be negative")
	case o.pipelineTo != "" && o.pipelineTo == o.queuePrefix:
		return fmt.Errorf("-pipeline-to must name other queues than -queue-prefix")
	case o.rate > 0 && o.consumeOnly:
		return fmt.Errorf("-rate paces the push side, and -consume-only pushes nothing")
	case !o.consumeOnly && (o.clients < 1 || o.items < 1 || o.partitions < 1 || o.queues < 1):
		return fmt.Errorf("clients, items, partitions and queues must be at least 1")
	}
	return nil
}

// consumeResult is what a run acknowledged in all, per group: the report's
// figures stop where the CPU reading does, these after the last
// acknowledgement in flight.
type consumeResult struct {
	pushed int64
	acked  []int64
}

// runConsume runs the consume mode.
func runConsume(ctx context.Context, o options, out io.Writer) (*consumeResult, error) {
	if err := checkConsume(o); err != nil {
		return nil, err
	}
	var producer *bridgeTarget
	if !o.consumeOnly {
		var err error
		if producer, err = newBridgeTarget(o); err != nil {
			return nil, err
		}
		defer producer.close()
	}
	names := groupNames(o.consumeGroup, o.groups)
	consumers := make([]*consumer, len(names))
	var nc *nats.Conn
	var client *http.Client
	if o.transport == "nats" {
		var err error
		if nc, err = nats.Connect(o.natsURL, nats.Name("queen-bench-consumers")); err != nil {
			return nil, err
		}
		defer nc.Close()
	} else {
		client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.consumers * o.groups}}
	}
	for g, name := range names {
		consumers[g] = &consumer{o: o, group: name, nc: nc, client: client}
	}
	meter := newMeter(ctx, o, out)
	defer meter.close()
	gen := newGenerator(o)
	st := &consumeStats{groups: newGroupCounts(names)}
	how := "batch acknowledgement"
	if o.pipelineTo != "" {
		how = "each batch forwarded to " + o.pipelineTo + "<n> in one transaction"
	}
	fmt.Fprintf(out, "\nconsume: %s (batch %d, %d partitions a pop, %s) over %s, %d partitions (%d queues), %s\n",
		consumeMode(o, names), o.consumeBatch, o.consumePartitions, how, o.transport, o.partitions, o.queues, o.duration)
	startCPU := meter.sample()
	start := time.Now()
	pushing, stopPush, sch, err := timetable(ctx, o, start)
	if err != nil {
		return nil, err
	}
	defer stopPush()
	consuming, stopConsume := context.WithCancel(ctx)
	defer stopConsume()
	late := &lateness{}
	var pwg, cwg sync.WaitGroup
	if producer != nil {
		for p := range o.clients {
			pwg.Go(func() { produce(ctx, pushing, p, producer, gen, sch, late, st) })
		}
	}
	for g, c := range consumers {
		for k := range o.consumers {
			cwg.Go(func() { consume(consuming, c.own(), queueName(o, k%o.queues), &st.groups.consumed[g], st) })
		}
	}
	pushDone := make(chan struct{})
	go func() { <-pushing.Done(); pwg.Wait(); close(pushDone) }()
	// A line a second; when the push side is done the figures are taken,
	// and the consumers drain what is left (at most 30 s), then stop.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastPushed, lastConsumed, maxLag int64
	var pushEnd time.Time
	var pushedAtEnd int64
	var consumedAtEnd []int64
	var endCPU sample
	for pushEnd.IsZero() || !(o.consumeOnly || slowestLag(st.pushed.Load(), st.groups.load()) <= 0 || time.Since(pushEnd) > 30*time.Second) {
		select {
		case <-pushDone:
			pushEnd, endCPU = time.Now(), meter.sample()
			pushedAtEnd, consumedAtEnd = st.pushed.Load(), st.groups.load()
			pushDone = nil
			continue
		case <-tick.C:
		}
		pushed, counts := st.pushed.Load(), st.groups.load()
		lag := slowestLag(pushed, counts)
		if !o.consumeOnly {
			maxLag = max(maxLag, lag)
		}
		fmt.Fprintf(out, "%5.0fs  pushed %8d/s  consumed %8d/s  lag %8d  errors %d\n", time.Since(start).Seconds(),
			pushed-lastPushed, total(counts)-lastConsumed, lag, st.errors.Load())
		lastPushed, lastConsumed = pushed, total(counts)
	}
	drained := time.Since(pushEnd)
	stopConsume()
	cwg.Wait()
	elapsed := pushEnd.Sub(start)
	cpu := endCPU.minus(startCPU)
	deliveries := total(consumedAtEnd)
	st.mu.Lock()
	p50, p99, top := quantiles(st.delivery)
	measured := len(st.delivery)
	st.mu.Unlock()
	fmt.Fprintf(out, "pushed     %d (%.0f/s)\n", pushedAtEnd, float64(pushedAtEnd)/elapsed.Seconds())
	if sch != nil {
		fmt.Fprintf(out, "late       %s\n", late)
	}
	fmt.Fprintf(out, "consumed   %d (%.0f/s) in %s; %d pops, %d empty\n", deliveries, float64(deliveries)/elapsed.Seconds(), elapsed.Round(time.Millisecond),
		st.pops.Load(), st.emptyPops.Load())
	if !math.IsNaN(cpu.tailHits) {
		fmt.Fprintf(out, "tail       %.0f pops served from the bridges' hot tails (%.0f%% of %d), %.0f misses\n", cpu.tailHits,
			100*cpu.tailHits/float64(max(st.pops.Load(), 1)), st.pops.Load(), cpu.tailMisses)
	}
	reportGroups(out, names, consumedAtEnd, elapsed)
	if !o.consumeOnly {
		fmt.Fprintf(out, "lag        at most %d; after the push stopped, %d left, drained in %s\n", maxLag, slowestLag(pushedAtEnd, consumedAtEnd),
			drained.Round(time.Millisecond))
	}
	if measured > 0 {
		from := "send"
		if sch != nil {
			from = "scheduled send"
		}
		fmt.Fprintf(out, "delivery   push-to-delivery p50 %s  p99 %s  max %s (%d messages, from the %s time)\n", p50.Round(10*time.Microsecond),
			p99.Round(10*time.Microsecond), top.Round(10*time.Microsecond), measured, from)
	}
	if o.consumeOnly {
		fmt.Fprintf(out, "cpu/item   per consumed item: %s\n", cpu.perItem(deliveries))
	} else {
		fmt.Fprintf(out, "cpu/item   per pushed + consumed item: %s\n", cpu.perItem(pushedAtEnd+deliveries))
	}
	fmt.Fprintf(out, "cpu/deliv  per delivery (%d groups, %d deliveries): %s\n", len(names), deliveries, cpu.perItem(deliveries))
	if o.pipelineTo != "" {
		fmt.Fprintf(out, "pipeline   %d forwarded to %s* (%.0f items/s), one transaction per popped batch; cpu per forwarded item: %s\n",
			deliveries, o.pipelineTo, float64(deliveries)/elapsed.Seconds(), cpu.perItem(deliveries))
	}
	if st.errors.Load() > 0 {
		fmt.Fprintf(out, "errors     %d, the first: %v\n", st.errors.Load(), st.firstErr)
	}
	return &consumeResult{pushed: st.pushed.Load(), acked: st.groups.load()}, nil
}

// consumeMode describes the load for the report's heading.
func consumeMode(o options, names []string) string {
	who := fmt.Sprintf("%d consumers of group %s", o.consumers, names[0])
	if len(names) > 1 {
		who = fmt.Sprintf("%d consumers in each of %d groups %s..%s", o.consumers, len(names), names[0], names[len(names)-1])
	}
	switch {
	case o.consumeOnly:
		return who + ", nothing pushed"
	case o.rate > 0:
		return fmt.Sprintf("%d producers × %d items open loop at %.0f items/s, and %s", o.clients, o.items, o.rate, who)
	}
	return fmt.Sprintf("%d producers × %d items closed loop, and %s", o.clients, o.items, who)
}

// produce is one producer: as fast as answers come back until pushing
// ends, or every request of the schedule that it takes (a request due
// before the end is sent even when it is late past the end, so the push
// side falls behind visibly instead of dropping it). Each request's
// payloads carry the time it was sent, or was due to be: latency from the
// due time counts a request's wait for a free client too.
func produce(ctx, pushing context.Context, p int, producer *bridgeTarget, gen *generator, sch *schedule, late *lateness, st *consumeStats) {
	for i := 0; ; i++ {
		n, sent, ok := next(ctx, pushing, i, sch, late)
		if !ok {
			return
		}
		items := gen.items(p, int(n))
		payload := []byte(`{"t":` + strconv.FormatInt(sent.UnixNano(), 10) + `,` + string(gen.payload[1:]))
		for k := range items {
			items[k].payload = payload
		}
		counts, err := producer.push(ctx, p, items)
		if err != nil {
			if ctx.Err() == nil {
				st.fail(err)
			}
			continue
		}
		st.pushed.Add(counts["queued"])
	}
}

// consume is one consumer of one group on one queue: pop, acknowledge the
// batch, count it and its push-to-delivery latencies, until ctx ends. c is
// the goroutine's own (consumer.own): it reuses its buffers.
func consume(ctx context.Context, c *consumer, queue string, acked *atomic.Int64, st *consumeStats) {
	var lat []time.Duration // reused: st.delivery takes a copy
	for ctx.Err() == nil {
		p, err := c.pop(queue)
		if err != nil {
			if ctx.Err() == nil {
				st.fail(err)
			}
			continue
		}
		st.pops.Add(1)
		if len(p.Messages) == 0 {
			st.emptyPops.Add(1)
			continue
		}
		now := time.Now()
		lat = lat[:0]
		for _, m := range p.Messages {
			if t, ok := sentAt(m.Data); ok {
				lat = append(lat, now.Sub(t))
			}
		}
		var n int
		if c.o.pipelineTo != "" {
			n, err = c.forward(forwardQueue(c.o, queue), p)
		} else {
			n, err = c.ack(p)
		}
		if err != nil {
			st.fail(err)
			continue
		}
		acked.Add(int64(n))
		st.mu.Lock()
		st.delivery = append(st.delivery, lat...)
		st.mu.Unlock()
	}
}
