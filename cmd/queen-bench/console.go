package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The console mode (-console): what an open console costs PostgreSQL. It
// fills -queues queues with -partitions partitions in all (one message each,
// and one pop with auto-acknowledgement per partition of the first queue by
// group console-bench, so its queue page has a group to show), measures
// PostgreSQL's CPU while nothing runs for -console-baseline, then reads
// what an open console reads for -duration: every -console-every (2 s, as
// the pages refresh) what the three live pages read: the overview's route,
// the queues page's list and the first queue's page (its consumers route;
// its options once, as the page does). It reports
// PostgreSQL's CPU as % of one core in both windows and their difference,
// and each route's answers and mean time. The figure is in docs/console.md.

// consoleRoute is one route an open console reads, and what it answered.
type consoleRoute struct {
	path     string
	answers  int
	failures map[int]int // status -> count; 0: no answer
	total    time.Duration
}

func runConsole(ctx context.Context, o options, out io.Writer) error {
	if o.target != "bridge" || o.queues < 1 || o.partitions < o.queues || o.consoleEvery <= 0 {
		return fmt.Errorf("-console needs -target bridge, -queues ≥ 1, -partitions ≥ -queues and a positive -console-every")
	}
	c := &http.Client{Timeout: 30 * time.Second}
	base := "http://" + o.httpAddr
	call := func(method, path string, body []byte) (int, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if o.token != "" {
			req.Header.Set("Authorization", "Bearer "+o.token)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		answer, err := io.ReadAll(resp.Body)
		return resp.StatusCode, answer, err
	}

	// The queues: one message per partition, a hundred items a request.
	g := newGenerator(o)
	fmt.Fprintf(out, "console: filling %d queues, %d partitions in all\n", o.queues, o.partitions)
	for from := 0; from < o.partitions; from += 100 {
		var body bytes.Buffer
		body.WriteString(`{"items":[`)
		for p := from; p < min(from+100, o.partitions); p++ {
			if p > from {
				body.WriteByte(',')
			}
			fmt.Fprintf(&body, `{"queue":%q,"partition":%q,"transactionId":"%s-console-%d","payload":{"n":%d}}`,
				g.queues[p], g.partitions[p], o.run, p, p)
		}
		body.WriteString(`]}`)
		status, answer, err := call("POST", "/api/v1/push", body.Bytes())
		if err != nil || status != http.StatusCreated {
			return fmt.Errorf("filling the queues: %d %s %v", status, answer, err)
		}
	}
	shown := queueName(o, 0)
	for p := 0; p < o.partitions; p += o.queues { // the first queue's partitions
		path := "/api/v1/pop/queue/" + url.PathEscape(shown) + "/partition/" + url.PathEscape(g.partitions[p]) + "?consumerGroup=console-bench&autoAck=true"
		if status, answer, err := call("GET", path, nil); err != nil || status >= 300 {
			return fmt.Errorf("a pop of %s: %d %s %v", shown, status, answer, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	m := newMeter(ctx, o, out)
	defer m.close()
	cpu := func(a, b sample, d time.Duration) float64 { return 100 * (b.pg - a.pg) / d.Seconds() }

	idle := math.NaN()
	if o.consoleBaseline > 0 {
		fmt.Fprintf(out, "console: PostgreSQL with nothing open, %s\n", o.consoleBaseline)
		s0, t0 := m.sample(), time.Now()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(o.consoleBaseline):
		}
		idle = cpu(s0, m.sample(), time.Since(t0))
	}

	// Every live page at once (a person has one open; this is the sum, an
	// upper bound): the overview, the queues page (whose counts cover every
	// partition) and the first queue's page.
	routes := []*consoleRoute{
		{path: "/api/v1/bridge/overview"},
		{path: "/api/v1/resources/queues"},
		{path: "/api/v1/resources/queues/" + url.PathEscape(shown) + "/consumers"},
	}
	options := &consoleRoute{path: "/api/v1/status/queues/" + url.PathEscape(shown)}
	read := func(r *consoleRoute) {
		start := time.Now()
		status, _, err := call("GET", r.path, nil)
		r.total += time.Since(start)
		if err == nil && status == http.StatusOK {
			r.answers++
			return
		}
		if r.failures == nil {
			r.failures = map[int]int{}
		}
		r.failures[status]++
	}
	fmt.Fprintf(out, "console: the overview, the queues page and the queue page of %s open, refreshed every %s, for %s\n", shown, o.consoleEvery, o.duration)
	s0, t0 := m.sample(), time.Now()
	read(options)
	tick := time.NewTicker(o.consoleEvery)
	defer tick.Stop()
	end := time.After(o.duration)
	refreshes := 0
loop:
	for {
		for _, r := range routes {
			read(r)
		}
		refreshes++
		select {
		case <-ctx.Done():
			break loop
		case <-end:
			break loop
		case <-tick.C:
		}
	}
	elapsed := time.Since(t0)
	open := cpu(s0, m.sample(), elapsed)

	fmt.Fprintf(out, "\nconsole: %d queues × %d partitions, %d refreshes in %.1f s\n", o.queues, o.partitions/o.queues, refreshes, elapsed.Seconds())
	for _, r := range append([]*consoleRoute{options}, routes...) {
		line := fmt.Sprintf("  GET %s: %d answers", r.path, r.answers)
		if n := r.answers + sum(r.failures); n > 0 {
			line += fmt.Sprintf(", %.1f ms mean", float64(r.total.Microseconds())/1e3/float64(n))
		}
		for status, n := range r.failures {
			line += fmt.Sprintf(", %d × status %d", n, status)
		}
		fmt.Fprintln(out, line)
	}
	fmt.Fprintf(out, "  PostgreSQL CPU, %% of one core: console open %s, nothing open %s, the console's share %s\n",
		pct(open), pct(idle), pct(open-idle))
	for _, r := range routes {
		if r.answers == 0 {
			return fmt.Errorf("GET %s never answered 200", r.path)
		}
	}
	return nil
}

func sum(m map[int]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func pct(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return strings.TrimRight(strings.TrimRight(strconv.FormatFloat(v, 'f', 2, 64), "0"), ".") + " %"
}
