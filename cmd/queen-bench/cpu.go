package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queenbridge/queenbridge/internal/proccpu"
)

// meter samples what the load costs: the bridge's CPU and fusion counters
// (its Prometheus page), PostgreSQL's CPU (the postmaster and its children,
// when the server runs on this machine), queen-bench's own CPU, and the
// bundle calls and their time, as the bridges count them. (Not
// pg_stat_user_functions: most bundles go through the known-partition
// statement, which calls no function.)
type meter struct {
	metricsURLs []string // none for baselines: no bridge to ask; several bridges: summed
	http        *http.Client
	pg          *pgx.Conn // nil without -pg-dsn; only to find the postmaster
	postmaster  int       // 0 when not local
	serverPID   int       // a JetStream server's process (-server-pid); 0: none
}

// sample is one reading; unknown values are NaN.
type sample struct {
	bridge, pg, bench    float64 // CPU seconds
	server               float64 // a JetStream server's CPU seconds
	commits, segments    float64 // fusion counters, summed over the bridges
	inFlight             float64
	tailHits, tailMisses float64   // pops the bridges' hot tails served from memory, and those they held the partition of but could not
	forwards             float64   // groups the bridges forwarded to their owners
	fallbacks            float64   // forwarded groups written by their receiver
	forwardMsgs          float64   // forward messages that carried them
	each                 []float64 // per bridge: commits, segments (pairs)
	calls, callMS        float64   // bundle calls (fusion's, whichever statements they ran) and their total time, ms
}

// cpuSplit is CPU per item, by process.
type cpuSplit = sample

// newMeter prepares the readings it can take, and says on out why one it
// was asked for cannot be taken (the report then shows n/a).
func newMeter(ctx context.Context, o options, out io.Writer) *meter {
	m := &meter{http: &http.Client{Timeout: 2 * time.Second}, serverPID: o.js.serverPID}
	if (o.target == "bridge" || o.target == "jetstream") && o.metricsURL != "" {
		m.metricsURLs = strings.Split(o.metricsURL, ",")
		for _, u := range m.metricsURLs {
			if _, err := scrape(m.http, u); err != nil {
				fmt.Fprintf(out, "note: no bridge CPU per item or bundle calls: %v\n", err)
			}
		}
	}
	if o.pgDSN == "" {
		return m
	}
	conn, err := pgx.Connect(ctx, o.pgDSN)
	if err != nil {
		fmt.Fprintf(out, "note: no PostgreSQL CPU per item: %v\n", err)
		return m
	}
	m.pg = conn
	var pid int32
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		fmt.Fprintf(out, "note: no PostgreSQL CPU per item: %v\n", err)
		return m
	}
	pm, err := proccpu.Parent(int(pid))
	if err != nil {
		fmt.Fprintf(out, "note: no PostgreSQL CPU per item (the server is not on this machine?): %v\n", err)
		return m
	}
	m.postmaster = pm
	return m
}

func (m *meter) close() {
	if m.pg != nil {
		_ = m.pg.Close(context.Background())
	}
}

func (m *meter) sample() sample {
	nan := math.NaN()
	s := sample{bridge: nan, pg: nan, bench: nan, server: serverCPU(m.serverPID), commits: nan, segments: nan, inFlight: nan, calls: nan, callMS: nan}
	if d, err := proccpu.Process(os.Getpid()); err == nil {
		s.bench = d.Seconds()
	}
	if m.postmaster != 0 {
		if d, err := proccpu.Tree(m.postmaster); err == nil {
			s.pg = d.Seconds()
		}
	}
	for i, u := range m.metricsURLs {
		v, err := scrape(m.http, u)
		if err != nil {
			s.bridge, s.commits, s.segments, s.calls, s.callMS, s.tailHits, s.tailMisses = nan, nan, nan, nan, nan, nan, nan
			break
		}
		if i == 0 {
			s.bridge, s.commits, s.segments, s.inFlight, s.forwards, s.fallbacks, s.forwardMsgs = 0, 0, 0, v["queen_fusion_in_flight_limit"], 0, 0, 0
			s.calls, s.callMS = 0, 0
		}
		// Every bundle call, committed or failed, whichever of its two
		// statements it ran.
		s.calls += v["queen_fusion_commits_total"] + v["queen_fusion_bundle_errors_total"]
		if busy, ok := v["queen_fusion_call_seconds_total"]; ok {
			s.callMS += busy * 1e3
		} else { // a bridge from before the counter
			s.callMS = nan
		}
		s.bridge += v["process_cpu_seconds_total"]
		s.commits += v["queen_fusion_commits_total"]
		s.segments += v["queen_fusion_segments_total"]
		s.tailHits += v["queen_tail_hits_total"]
		s.tailMisses += v["queen_tail_misses_total"]
		s.forwards += v["queen_forward_groups_total"]
		s.fallbacks += v["queen_forward_fallback_groups_total"]
		s.forwardMsgs += v["queen_forward_requests_total"]
		s.each = append(s.each, v["queen_fusion_commits_total"], v["queen_fusion_segments_total"])
	}
	return s
}

// minus is the difference of two readings (NaN stays NaN).
func (s sample) minus(b sample) sample {
	d := sample{bridge: s.bridge - b.bridge, pg: s.pg - b.pg, bench: s.bench - b.bench, server: s.server - b.server, commits: s.commits - b.commits,
		segments: s.segments - b.segments, inFlight: s.inFlight, calls: s.calls - b.calls, callMS: s.callMS - b.callMS,
		forwards: s.forwards - b.forwards, fallbacks: s.fallbacks - b.fallbacks, forwardMsgs: s.forwardMsgs - b.forwardMsgs,
		tailHits: s.tailHits - b.tailHits, tailMisses: s.tailMisses - b.tailMisses}
	if len(s.each) == len(b.each) {
		for i := range s.each {
			d.each = append(d.each, s.each[i]-b.each[i])
		}
	}
	return d
}

func (s sample) perItem(items int64) cpuSplit {
	n := float64(max(items, 1))
	s.bridge, s.pg, s.bench, s.server = s.bridge/n, s.pg/n, s.bench/n, s.server/n
	return s
}

func us(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", v*1e6)
}

func (s cpuSplit) String() string {
	out := fmt.Sprintf("bridge %s µs, postgres %s µs, queen-bench %s µs", us(s.bridge), us(s.pg), us(s.bench))
	if !math.IsNaN(s.server) {
		out += fmt.Sprintf(", server (-server-pid) %s µs", us(s.server))
	}
	return out
}

func (s cpuSplit) short() string { return us(s.bridge) + " / " + us(s.pg) + " / " + us(s.bench) }

// bundleLine describes a window's bundle calls (their mean time from the
// bridge's side: the pooled connection, both statements, their round trips)
// and fusion counters.
func (s sample) bundleLine() string {
	var b strings.Builder
	if s.calls > 0 && !math.IsNaN(s.callMS) {
		fmt.Fprintf(&b, "bundle call %.3f ms (%0.f calls)", s.callMS/s.calls, s.calls)
	} else {
		b.WriteString("bundle call n/a")
	}
	if s.commits > 0 {
		fmt.Fprintf(&b, ", %.1f segments per commit, in-flight limit %.0f", s.segments/s.commits, s.inFlight)
	}
	return b.String()
}

// scrape reads the unlabelled samples of a Prometheus text page.
func scrape(c *http.Client, url string) (map[string]float64, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || strings.ContainsRune(line, '{') {
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(strings.Fields(val)[0], 64); err == nil {
			out[name] = v
		}
	}
	return out, sc.Err()
}
