package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// item is one message of a request.
type item struct {
	queue, partition, txid string
	payload                []byte
}

// target sends one request's items and answers how many of each status
// came back. Each client uses its own index c.
type target interface {
	push(ctx context.Context, c int, items []item) (map[string]int64, error)
	close()
}

// stats is shared by the clients (atomics and a mutex-guarded latency list).
type stats struct {
	requests, items, errors atomic.Int64
	mu                      sync.Mutex
	statuses                map[string]int64
	lat                     []time.Duration
	firstErr                error
}

func (s *stats) record(d time.Duration, statuses map[string]int64) {
	s.mu.Lock()
	s.lat = append(s.lat, d)
	for k, v := range statuses {
		s.statuses[k] += v
	}
	s.mu.Unlock()
}

func (s *stats) fail(err error) {
	s.errors.Add(1)
	s.mu.Lock()
	if s.firstErr == nil {
		s.firstErr = err
	}
	s.mu.Unlock()
}

func (s *stats) percentiles(from int) (p50, p99, top time.Duration) {
	s.mu.Lock()
	l := append([]time.Duration(nil), s.lat[from:]...)
	s.mu.Unlock()
	return quantiles(l)
}

// result is one target's run.
type result struct {
	o              options
	elapsed        time.Duration
	requests, errs int64
	items          int64
	p50, p99, top  time.Duration
	statuses       map[string]int64
	cpu            cpuSplit  // per item
	segsPerCommit  float64   // bridge only, all bridges together; 0 when unknown
	segsEach       []float64 // per bridge, with several
	forwards       float64   // groups forwarded between bridges, per item
	fallbacks      float64   // of which written by their receiver
	groupsPerFwd   float64   // groups per forward message
	inFlight       float64
}

func (r *result) rate() float64 { return float64(r.items) / r.elapsed.Seconds() }

// generator builds the items of every request. Queue and partition names
// are made once: the load generator shares the cores it measures, so its
// own cost per item is kept small.
type generator struct {
	o                  options
	queues, partitions []string // by partition index
	payload            []byte
}

func newGenerator(o options) *generator {
	g := &generator{o: o, queues: make([]string, o.partitions), partitions: make([]string, o.partitions), payload: payloadOf(o.payload)}
	for p := range g.partitions {
		g.queues[p] = queueName(o, p%o.queues)
		g.partitions[p] = "p" + strconv.Itoa(p)
	}
	return g
}

// items builds the items of request i of client c: spread over the
// partitions, or all in one with -group; transactionIds unique per run.
func (g *generator) items(c, i int) []item {
	o := g.o
	out := make([]item, o.items)
	var txid []byte
	for k := range out {
		n := c*1_000_003 + i*o.items + k
		if o.group {
			n = c*1_000_003 + i
		}
		txid = append(txid[:0], o.run...)
		for _, v := range [...]int{c, i, k} {
			txid = strconv.AppendInt(append(txid, '-'), int64(v), 10)
		}
		p := n % o.partitions
		out[k] = item{queue: g.queues[p], partition: g.partitions[p], txid: string(txid), payload: g.payload}
	}
	return out
}

// queueName is the name of queue q: <-queue-prefix><q>, bench.q<q> by
// default.
func queueName(o options, q int) string {
	if o.queuePrefix == "" {
		o.queuePrefix = "bench.q"
	}
	return o.queuePrefix + strconv.Itoa(q)
}

// run loads one target for o.duration and reports.
func run(ctx context.Context, o options, out io.Writer) (*result, error) {
	if o.clients < 1 || o.items < 1 || o.partitions < 1 || o.queues < 1 || o.duration <= 0 {
		return nil, fmt.Errorf("clients, items, partitions, queues and duration must be at least 1")
	}
	tg, err := newTarget(ctx, o)
	if err != nil {
		return nil, err
	}
	defer tg.close()
	meter := newMeter(ctx, o, out)
	defer meter.close()
	gen := newGenerator(o)
	st := &stats{statuses: map[string]int64{}}
	var wg sync.WaitGroup
	fmt.Fprintf(out, "\n%s, %s\n", describe(o), o.duration)
	startCPU := meter.sample()
	start := time.Now()
	// The deadline stops new requests; one in flight finishes (on ctx, which
	// only an interrupt ends) and is counted, so reports match what was
	// written. On a timetable every request due before the end is sent.
	loop, cancel, sch, err := timetable(ctx, o, start)
	if err != nil {
		return nil, err
	}
	defer cancel()
	late := &lateness{}
	for c := 0; c < o.clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; ; i++ {
				req, t0, ok := next(ctx, loop, i, sch, late)
				if !ok {
					break
				}
				items := gen.items(c, int(req))
				if sch == nil {
					t0 = time.Now() // a closed loop times the request alone
				}
				counts, err := tg.push(ctx, c, items)
				d := time.Since(t0)
				if err != nil {
					if ctx.Err() == nil {
						st.fail(err)
					}
					continue
				}
				n := int64(0)
				for _, v := range counts {
					n += v
				}
				st.requests.Add(1)
				st.items.Add(n)
				st.record(d, counts)
			}
		}(c)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	progress(out, o, st, meter, start, done)
	elapsed := time.Since(start)
	r := &result{o: o, elapsed: elapsed, requests: st.requests.Load(), errs: st.errors.Load(), items: st.items.Load(), statuses: st.statuses}
	r.p50, r.p99, r.top = st.percentiles(0)
	endCPU := meter.sample()
	r.cpu = endCPU.minus(startCPU).perItem(r.items)
	if o.target == "bridge" {
		if c := endCPU.commits - startCPU.commits; c > 0 {
			r.segsPerCommit = (endCPU.segments - startCPU.segments) / c
		}
		r.inFlight = endCPU.inFlight
		d := endCPU.minus(startCPU)
		for i := 0; i+1 < len(d.each) && len(d.each) > 2; i += 2 {
			r.segsEach = append(r.segsEach, d.each[i+1]/max(d.each[i], 1))
		}
		r.forwards, r.fallbacks = d.forwards/float64(max(r.items, 1)), d.fallbacks
		if d.forwardMsgs > 0 {
			r.groupsPerFwd = d.forwards / d.forwardMsgs
		}
	}
	report(out, r)
	if sch != nil {
		fmt.Fprintf(out, "late       %s\n", late)
	}
	if r.errs > 0 {
		fmt.Fprintf(out, "first error: %v\n", st.firstErr)
	}
	return r, nil
}

// progress prints a line a second, and one per -window, until done.
func progress(out io.Writer, o options, st *stats, meter *meter, start time.Time, done <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastItems, winItems int64
	lastLat := 0
	winStart, winSample := start, meter.sample()
	for {
		select {
		case <-done:
			return
		case <-tick.C:
			items := st.items.Load()
			st.mu.Lock()
			n := len(st.lat)
			st.mu.Unlock()
			p50, p99, _ := st.percentiles(lastLat)
			fmt.Fprintf(out, "%5.0fs  %8d items/s  p50 %-8s p99 %-8s errors %d\n", time.Since(start).Seconds(), items-lastItems,
				p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), st.errors.Load())
			lastItems, lastLat = items, n
			if o.window > 0 && time.Since(winStart) >= o.window {
				s := meter.sample()
				d := s.minus(winSample)
				fmt.Fprintf(out, "window %3.0f-%3.0fs  %8.0f items/s  %s\n", winStart.Sub(start).Seconds(), time.Since(start).Seconds(),
					float64(items-winItems)/time.Since(winStart).Seconds(), d.bundleLine())
				winStart, winSample, winItems = time.Now(), s, items
			}
		}
	}
}

func report(out io.Writer, r *result) {
	fmt.Fprintf(out, "requests   %d (%.0f/s), errors %d\n", r.requests, float64(r.requests)/r.elapsed.Seconds(), r.errs)
	fmt.Fprintf(out, "items      %d (%.0f/s)\n", r.items, r.rate())
	if r.top > 0 { // the jetstream target does not time each message
		fmt.Fprintf(out, "latency    p50 %s  p99 %s  max %s\n", r.p50.Round(10*time.Microsecond), r.p99.Round(10*time.Microsecond), r.top.Round(10*time.Microsecond))
	}
	fmt.Fprintf(out, "cpu/item   %s\n", r.cpu)
	if r.segsPerCommit > 0 {
		fmt.Fprintf(out, "fusion     %.1f segments per commit, in-flight limit %.0f\n", r.segsPerCommit, r.inFlight)
	}
	if len(r.segsEach) > 0 {
		fmt.Fprintf(out, "bridges    %d, segments per commit each %.1f\n", len(r.segsEach), r.segsEach)
	}
	if r.o.target == "bridge" && !math.IsNaN(r.forwards) {
		fmt.Fprintf(out, "forwards   %.3f groups per item, %.2f groups per forward message, %.0f fallbacks\n", r.forwards, r.groupsPerFwd, r.fallbacks)
	}
	keys := make([]string, 0, len(r.statuses))
	for k := range r.statuses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(out, "status     %-10s %d\n", k, r.statuses[k])
	}
}

// compareTable prints the runs side by side with the bridge's ratios.
func compareTable(out io.Writer, o options, rows []*result) {
	bridge := rows[0]
	open := ""
	if o.rate > 0 {
		open = fmt.Sprintf(", open loop at %g items/s (items/s is what was asked; compare CPU per item)", o.rate)
	}
	fmt.Fprintf(out, "\ncompare: %d clients × %d items, %d partitions, group=%v, %s each%s\n", o.clients, o.items, o.partitions, o.group, o.duration, open)
	fmt.Fprintf(out, "%-12s %10s %10s %10s %12s %30s\n", "target", "items/s", "p50", "p99", "bridge ÷ it", "cpu/item bridge/pg/bench µs")
	for _, r := range rows {
		ratio := "—"
		if r != bridge && r.rate() > 0 {
			ratio = fmt.Sprintf("%.2f×", bridge.rate()/r.rate())
		}
		fmt.Fprintf(out, "%-12s %10.0f %10s %10s %12s %30s\n", r.o.target, r.rate(), r.p50.Round(10*time.Microsecond),
			r.p99.Round(10*time.Microsecond), ratio, r.cpu.short())
	}
	if bridge.segsPerCommit > 0 {
		fmt.Fprintf(out, "bridge: %.1f segments per commit, in-flight limit %.0f; p50 ÷ direct p50 = %.2f\n", bridge.segsPerCommit, bridge.inFlight,
			float64(bridge.p50)/float64(max(1, rows[1].p50)))
	}
}
