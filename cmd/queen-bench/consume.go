package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// The consume mode (-consumers N): producers push as in the bridge target
// while N consumers of one group pop (any partition, -consume-batch, a
// long-poll wait) and acknowledge each batch in one request, over the same
// transport. It reports pushed and consumed items/s, the group's lag (items
// pushed and not yet acknowledged) every second, push-to-delivery latency
// (each request's payloads carry its send time), and CPU per item of the
// bridge and PostgreSQL. With -consume-only nothing is pushed: the
// consumers drain what earlier runs left, and the CPU is per consumed item.

// consumeStats is shared by producers and consumers (atomics, and a
// mutex-guarded latency list).
type consumeStats struct {
	pushed, consumed, pops, emptyPops, errors atomic.Int64
	mu                                        sync.Mutex
	delivery                                  []time.Duration
	firstErr                                  error
}

func (s *consumeStats) fail(err error) {
	s.errors.Add(1)
	s.mu.Lock()
	if s.firstErr == nil {
		s.firstErr = err
	}
	s.mu.Unlock()
}

// consumer pops and acknowledges over one transport.
type consumer struct {
	o      options
	group  string
	nc     *nats.Conn
	client *http.Client
}

type poppedWire struct {
	Messages []struct {
		TransactionID string          `json:"transactionId"`
		PartitionID   string          `json:"partitionId"`
		LeaseID       string          `json:"leaseId"`
		Data          json.RawMessage `json:"data"`
	} `json:"messages"`
}

// pop asks for up to -consume-batch messages of queue, waiting up to a
// second.
func (c *consumer) pop(queue string) (*poppedWire, error) {
	var answer []byte
	if c.nc != nil {
		body := fmt.Sprintf(`{"queue":%q,"consumerGroup":%q,"batch":%d,"partitions":%d,"wait":true,"timeout":1000}`,
			queue, c.group, c.o.consumeBatch, c.o.consumePartitions)
		m, err := c.nc.Request(c.o.prefix+".v1.pop", []byte(body), 30*time.Second)
		if err != nil {
			return nil, err
		}
		if code := m.Header.Get("Nats-Service-Error-Code"); code != "" {
			return nil, fmt.Errorf("pop: error %s: %s", code, m.Header.Get("Nats-Service-Error"))
		}
		answer = m.Data
	} else {
		q := url.Values{"consumerGroup": {c.group}, "batch": {strconv.Itoa(c.o.consumeBatch)}, "partitions": {strconv.Itoa(c.o.consumePartitions)},
			"wait": {"true"}, "timeout": {"1000"}}
		resp, err := c.client.Get("http://" + c.o.httpAddr + "/api/v1/pop/queue/" + url.PathEscape(queue) + "?" + q.Encode())
		if err != nil {
			return nil, err
		}
		answer, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if resp.StatusCode == http.StatusNoContent {
			return &poppedWire{}, nil
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("pop: HTTP %d: %s", resp.StatusCode, answer)
		}
	}
	var p poppedWire
	if len(answer) == 0 {
		return &p, nil
	}
	if err := json.Unmarshal(answer, &p); err != nil {
		return nil, fmt.Errorf("pop answer: %w", err)
	}
	return &p, nil
}

// ack acknowledges a batch in one request and answers how many succeeded.
func (c *consumer) ack(p *poppedWire) (int, error) {
	body := make([]byte, 0, 64+len(p.Messages)*120)
	body = append(body, `{"consumerGroup":`...)
	body = strconv.AppendQuote(body, c.group)
	body = append(body, `,"acknowledgments":[`...)
	for i, m := range p.Messages {
		if i > 0 {
			body = append(body, ',')
		}
		body = strconv.AppendQuote(append(body, `{"transactionId":`...), m.TransactionID)
		body = strconv.AppendQuote(append(body, `,"partitionId":`...), m.PartitionID)
		body = strconv.AppendQuote(append(body, `,"leaseId":`...), m.LeaseID)
		body = append(body, `,"status":"completed"}`...)
	}
	body = append(body, `]}`...)
	var answer []byte
	if c.nc != nil {
		m, err := c.nc.Request(c.o.prefix+".v1.ack", body, 30*time.Second)
		if err != nil {
			return 0, err
		}
		answer = m.Data
	} else {
		resp, err := c.client.Post("http://"+c.o.httpAddr+"/api/v1/ack/batch", "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		answer, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, err
		}
	}
	return bytes.Count(answer, []byte(`"success":true`)), nil
}

// sentAt reads the send time a producer put in the payload.
func sentAt(data []byte) (time.Time, bool) {
	i := bytes.Index(data, []byte(`"t":`))
	if i < 0 {
		return time.Time{}, false
	}
	rest := data[i+4:]
	j := bytes.IndexByte(rest, ',')
	if j < 0 {
		return time.Time{}, false
	}
	ns, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}

// runConsume runs the consume mode.
func runConsume(ctx context.Context, o options, out io.Writer) error {
	if o.target != "bridge" {
		return fmt.Errorf("-consumers needs -target bridge")
	}
	if o.consumeBatch < 1 || o.consumePartitions < 1 {
		return fmt.Errorf("-consume-batch and -consume-partitions must be at least 1")
	}
	var producer *bridgeTarget
	if !o.consumeOnly {
		var err error
		if producer, err = newBridgeTarget(o); err != nil {
			return err
		}
		defer producer.close()
	}
	c := &consumer{o: o, group: o.consumeGroup}
	if o.transport == "nats" {
		nc, err := nats.Connect(o.natsURL, nats.Name("queen-bench-consumers"))
		if err != nil {
			return err
		}
		defer nc.Close()
		c.nc = nc
	} else {
		c.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.consumers}}
	}
	meter := newMeter(ctx, o, out)
	defer meter.close()
	gen := newGenerator(o)
	st := &consumeStats{}
	mode := fmt.Sprintf("%d producers × %d items and %d consumers", o.clients, o.items, o.consumers)
	if o.consumeOnly {
		mode = fmt.Sprintf("%d consumers, nothing pushed", o.consumers)
	}
	fmt.Fprintf(out, "\nconsume: %s (group %s, batch %d, %d partitions a pop, batch acknowledgement) over %s, %d partitions (%d queues), %s\n",
		mode, o.consumeGroup, o.consumeBatch, o.consumePartitions, o.transport, o.partitions, o.queues, o.duration)
	pushing, stopPush := context.WithTimeout(ctx, o.duration)
	defer stopPush()
	consuming, stopConsume := context.WithCancel(ctx)
	defer stopConsume()
	startCPU := meter.sample()
	start := time.Now()
	var pwg, cwg sync.WaitGroup
	if producer != nil {
		for p := 0; p < o.clients; p++ {
			pwg.Add(1)
			go func(p int) {
				defer pwg.Done()
				for i := 0; pushing.Err() == nil; i++ {
					items := gen.items(p, i)
					payload := []byte(`{"t":` + strconv.FormatInt(time.Now().UnixNano(), 10) + `,` + string(gen.payload[1:]))
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
			}(p)
		}
	}
	for k := 0; k < o.consumers; k++ {
		cwg.Add(1)
		go func(k int) {
			defer cwg.Done()
			queue := queueName(o, k%o.queues)
			for consuming.Err() == nil {
				p, err := c.pop(queue)
				if err != nil {
					if consuming.Err() == nil {
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
				var lat []time.Duration
				for _, m := range p.Messages {
					if t, ok := sentAt(m.Data); ok {
						lat = append(lat, now.Sub(t))
					}
				}
				n, err := c.ack(p)
				if err != nil {
					st.fail(err)
					continue
				}
				st.consumed.Add(int64(n))
				st.mu.Lock()
				st.delivery = append(st.delivery, lat...)
				st.mu.Unlock()
			}
		}(k)
	}
	// A line a second; after the push deadline the consumers drain what is
	// left (at most 30 s), then stop.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastPushed, lastConsumed, maxLag int64
	var pushEnd time.Time
	var pushedAtEnd, consumedAtEnd int64
	var endCPU sample
	for {
		<-tick.C
		pushed, consumed := st.pushed.Load(), st.consumed.Load()
		lag := pushed - consumed
		if !o.consumeOnly {
			maxLag = max(maxLag, lag)
		}
		fmt.Fprintf(out, "%5.0fs  pushed %8d/s  consumed %8d/s  lag %8d  errors %d\n", time.Since(start).Seconds(),
			pushed-lastPushed, consumed-lastConsumed, lag, st.errors.Load())
		lastPushed, lastConsumed = pushed, consumed
		if pushEnd.IsZero() && pushing.Err() != nil {
			pwg.Wait()
			pushEnd = time.Now()
			pushedAtEnd, consumedAtEnd = st.pushed.Load(), st.consumed.Load()
			endCPU = meter.sample()
		}
		if !pushEnd.IsZero() && (o.consumeOnly || st.consumed.Load() >= st.pushed.Load() || time.Since(pushEnd) > 30*time.Second) {
			break
		}
	}
	drained := time.Since(pushEnd)
	stopConsume()
	cwg.Wait()
	elapsed := pushEnd.Sub(start)
	cpu := endCPU.minus(startCPU)
	st.mu.Lock()
	lat := append([]time.Duration(nil), st.delivery...)
	st.mu.Unlock()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	fmt.Fprintf(out, "pushed     %d (%.0f/s)\n", pushedAtEnd, float64(pushedAtEnd)/elapsed.Seconds())
	fmt.Fprintf(out, "consumed   %d (%.0f/s) in %s; %d pops, %d empty\n", consumedAtEnd, float64(consumedAtEnd)/elapsed.Seconds(), elapsed.Round(time.Millisecond),
		st.pops.Load(), st.emptyPops.Load())
	if !o.consumeOnly {
		fmt.Fprintf(out, "lag        at most %d; after the push stopped, %d left, drained in %s\n", maxLag, pushedAtEnd-consumedAtEnd, drained.Round(time.Millisecond))
	}
	if len(lat) > 0 {
		fmt.Fprintf(out, "delivery   push-to-delivery p50 %s  p99 %s  max %s (%d messages)\n", lat[len(lat)/2].Round(10*time.Microsecond),
			lat[len(lat)*99/100].Round(10*time.Microsecond), lat[len(lat)-1].Round(10*time.Microsecond), len(lat))
	}
	if o.consumeOnly {
		fmt.Fprintf(out, "cpu/item   per consumed item: %s\n", cpu.perItem(consumedAtEnd))
	} else {
		fmt.Fprintf(out, "cpu/item   per pushed + consumed item: %s\n", cpu.perItem(pushedAtEnd+consumedAtEnd))
	}
	if st.errors.Load() > 0 {
		fmt.Fprintf(out, "errors     %d, the first: %v\n", st.errors.Load(), st.firstErr)
	}
	return nil
}
