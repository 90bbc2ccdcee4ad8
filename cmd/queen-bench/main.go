package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

type options struct {
	transport  string
	natsURL    string
	prefix     string
	httpAddr   string
	clients    int
	items      int
	partitions int
	queues     int
	payload    int
	duration   time.Duration
	run        string
}

func main() {
	var o options
	flag.StringVar(&o.transport, "transport", "nats", "nats or http")
	flag.StringVar(&o.natsURL, "nats", "nats://127.0.0.1:4222", "NATS URL")
	flag.StringVar(&o.prefix, "prefix", "queen", "subject prefix")
	flag.StringVar(&o.httpAddr, "http", "127.0.0.1:6632", "HTTP address")
	flag.IntVar(&o.clients, "clients", 16, "concurrent requesters")
	flag.IntVar(&o.items, "items", 1, "items per request")
	flag.IntVar(&o.partitions, "partitions", 100, "partitions written to (spread over the queues)")
	flag.IntVar(&o.queues, "queues", 1, "queues written to")
	flag.IntVar(&o.payload, "payload", 200, "payload size in bytes")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "how long to push")
	flag.StringVar(&o.run, "run", fmt.Sprintf("r%d", time.Now().Unix()), "prefix of every transactionId (unique per run)")
	flag.Parse()
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "queen-bench:", err)
		os.Exit(1)
	}
}

// stats is shared by the clients (atomics and a mutex-guarded latency list).
type stats struct {
	requests, items, errors atomic.Int64
	mu                      sync.Mutex
	statuses                map[string]int64
	lat                     []time.Duration
}

func (s *stats) record(d time.Duration, statuses map[string]int64) {
	s.mu.Lock()
	s.lat = append(s.lat, d)
	for k, v := range statuses {
		s.statuses[k] += v
	}
	s.mu.Unlock()
}

func (s *stats) percentiles(from int) (p50, p99 time.Duration) {
	s.mu.Lock()
	l := append([]time.Duration(nil), s.lat[from:]...)
	s.mu.Unlock()
	if len(l) == 0 {
		return 0, 0
	}
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	return l[len(l)/2], l[len(l)*99/100]
}

func run(o options, out io.Writer) error {
	if o.clients < 1 || o.items < 1 || o.partitions < 1 || o.queues < 1 {
		return fmt.Errorf("clients, items, partitions and queues must be at least 1")
	}
	send, closeFn, err := sender(o)
	if err != nil {
		return err
	}
	defer closeFn()
	payload := `{"data":"` + strings.Repeat("x", max(0, o.payload-11)) + `"}`
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, o.duration)
	defer cancelT()
	st := &stats{statuses: map[string]int64{}}
	var wg sync.WaitGroup
	start := time.Now()
	for c := 0; c < o.clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			var body bytes.Buffer
			for i := 0; ctx.Err() == nil; i++ {
				body.Reset()
				body.WriteString(`{"items":[`)
				for k := 0; k < o.items; k++ {
					if k > 0 {
						body.WriteByte(',')
					}
					n := (c*1_000_003 + i*o.items + k)
					fmt.Fprintf(&body, `{"queue":"bench.q%d","partition":"p%d","transactionId":"%s-%d-%d-%d","payload":%s}`,
						n%o.queues, n%o.partitions, o.run, c, i, k, payload)
				}
				body.WriteString(`]}`)
				t0 := time.Now()
				out, err := send(body.Bytes())
				d := time.Since(t0)
				if err != nil {
					st.errors.Add(1)
					continue
				}
				var rs []struct{ Status string }
				if json.Unmarshal(out, &rs) != nil {
					st.errors.Add(1)
					continue
				}
				counts := map[string]int64{}
				for _, r := range rs {
					counts[r.Status]++
				}
				st.requests.Add(1)
				st.items.Add(int64(len(rs)))
				st.record(d, counts)
			}
		}(c)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastItems int64
	lastLat := 0
	for {
		select {
		case <-done:
			report(out, o, st, time.Since(start))
			return nil
		case <-tick.C:
			items := st.items.Load()
			st.mu.Lock()
			n := len(st.lat)
			st.mu.Unlock()
			p50, p99 := st.percentiles(lastLat)
			fmt.Fprintf(out, "%5.0fs  %8d items/s  p50 %-8s p99 %-8s errors %d\n", time.Since(start).Seconds(), items-lastItems,
				p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), st.errors.Load())
			lastItems, lastLat = items, n
		}
	}
}

func report(out io.Writer, o options, st *stats, elapsed time.Duration) {
	p50, p99 := st.percentiles(0)
	st.mu.Lock()
	defer st.mu.Unlock()
	var max time.Duration
	for _, d := range st.lat {
		if d > max {
			max = d
		}
	}
	fmt.Fprintf(out, "\n%s, %d clients, %d items/request, %d partitions over %d queues, %d-byte payloads, %s\n",
		o.transport, o.clients, o.items, o.partitions, o.queues, o.payload, elapsed.Round(time.Millisecond))
	fmt.Fprintf(out, "requests   %d (%.0f/s), errors %d\n", st.requests.Load(), float64(st.requests.Load())/elapsed.Seconds(), st.errors.Load())
	fmt.Fprintf(out, "items      %d (%.0f/s)\n", st.items.Load(), float64(st.items.Load())/elapsed.Seconds())
	fmt.Fprintf(out, "latency    p50 %s  p99 %s  max %s\n", p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), max.Round(10*time.Microsecond))
	keys := make([]string, 0, len(st.statuses))
	for k := range st.statuses {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(out, "status     %-10s %d\n", k, st.statuses[k])
	}
}

// sender returns a function that sends one push body and returns the answer.
func sender(o options) (func([]byte) ([]byte, error), func(), error) {
	switch o.transport {
	case "nats":
		nc, err := nats.Connect(o.natsURL, nats.Name("queen-bench"))
		if err != nil {
			return nil, nil, err
		}
		subject := o.prefix + ".v1.push"
		return func(b []byte) ([]byte, error) {
			m, err := nc.Request(subject, b, 30*time.Second)
			if err != nil {
				return nil, err
			}
			if code := m.Header.Get("Nats-Service-Error-Code"); code != "" {
				return nil, fmt.Errorf("error %s: %s", code, m.Header.Get("Nats-Service-Error"))
			}
			return m.Data, nil
		}, nc.Close, nil
	case "http":
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.clients}}
		url := "http://" + o.httpAddr + "/api/v1/push"
		return func(b []byte) ([]byte, error) {
			resp, err := client.Post(url, "application/json", bytes.NewReader(b))
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			out, err := io.ReadAll(resp.Body)
			if err == nil && resp.StatusCode != http.StatusCreated {
				err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, out)
			}
			return out, err
		}, client.CloseIdleConnections, nil
	}
	return nil, nil, fmt.Errorf("transport must be nats or http, got %q", o.transport)
}
