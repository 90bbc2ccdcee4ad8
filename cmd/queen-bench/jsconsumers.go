package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
)

// jsConsumers are the JetStream consumer load's consumers: each its own
// connection and a Consume() of the one durable pull consumer, which
// acknowledges every message (Ack, or DoubleAck: answered once the ack is
// stored) and times it from the send time in its payload.
type jsConsumers struct {
	conns []*nats.Conn
	each  []*jsConsumer
	ccs   []js.ConsumeContext

	seen            *seenSet
	received, acked atomic.Int64 // every delivery; every acknowledgement sent (DoubleAck: answered)
	unstamped       atomic.Int64 // deliveries without the load's stamp
	failed          atomic.Int64
	errMu           sync.Mutex // guards firstErr: every consumer's callback may set it
	firstErr        error
	timing          atomic.Bool // record latencies (not while draining a backlog)
	doubleAck       bool
}

// jsConsumer is what one Consume() callback records; nats.go calls it from
// one goroutine per consumer, and the report reads it after Stop.
type jsConsumer struct {
	mu  sync.Mutex // the callback appends, the report reads: a lock so that the order of Stop and the last callback does not matter
	lat []time.Duration
	// toStored and fromStored split each latency at the delivery's stored
	// timestamp (its metadata): publish to stored, stored to receive.
	toStored, fromStored []time.Duration
}

// newJSConsumers connects n consumers to the durable name of stream at url
// (each looks the consumer up on its own connection); none consumes yet.
func newJSConsumers(ctx context.Context, url, stream, name string, n int, doubleAck bool) (*jsConsumers, []js.Consumer, error) {
	c := &jsConsumers{seen: &seenSet{}, doubleAck: doubleAck}
	var handles []js.Consumer
	for range n {
		nc, err := nats.Connect(url, nats.Name("queen-bench-consumer"))
		if err != nil {
			c.close()
			return nil, nil, fmt.Errorf("consumer connection to %s: %w", url, err)
		}
		c.conns = append(c.conns, nc)
		j, err := js.New(nc)
		if err != nil {
			c.close()
			return nil, nil, err
		}
		h, err := j.Consumer(ctx, stream, name)
		if err != nil {
			c.close()
			return nil, nil, fmt.Errorf("consumer %s of stream %s: %w", name, stream, apiErr(url, err))
		}
		handles = append(handles, h)
		c.each = append(c.each, &jsConsumer{})
	}
	return c, handles, nil
}

// consume starts every Consume(); pullMax sets PullMaxMessages (0: nats.go's
// default).
func (c *jsConsumers) consume(handles []js.Consumer, pullMax int) error {
	opts := []js.PullConsumeOpt{js.ConsumeErrHandler(func(_ js.ConsumeContext, err error) { c.fail(err) })}
	if pullMax > 0 {
		opts = append(opts, js.PullMaxMessages(pullMax))
	}
	for i, h := range handles {
		one := c.each[i]
		cc, err := h.Consume(func(m js.Msg) { c.handle(one, m) }, opts...)
		if err != nil {
			return fmt.Errorf("start consuming: %w", err)
		}
		c.ccs = append(c.ccs, cc)
	}
	return nil
}

// handle acknowledges one message and records it.
func (c *jsConsumers) handle(one *jsConsumer, m js.Msg) {
	now := time.Now()
	c.received.Add(1)
	var err error
	if c.doubleAck {
		err = m.DoubleAck(context.Background()) // nats.go's default timeout
	} else {
		err = m.Ack()
	}
	if err != nil {
		c.fail(fmt.Errorf("acknowledge: %w", err))
		return
	}
	c.acked.Add(1)
	at, n, ok := unstamp(m.Data())
	if !ok {
		c.unstamped.Add(1)
		c.fail(fmt.Errorf("a message without the load's stamp on %s: %.40q", m.Subject(), m.Data()))
		return
	}
	if c.seen.mark(n) && c.timing.Load() {
		md, mdErr := m.Metadata()
		one.mu.Lock()
		one.lat = append(one.lat, now.Sub(at))
		if mdErr == nil {
			one.toStored = append(one.toStored, md.Timestamp.Sub(at))
			one.fromStored = append(one.fromStored, now.Sub(md.Timestamp))
		}
		one.mu.Unlock()
	}
}

func (c *jsConsumers) fail(err error) {
	c.failed.Add(1)
	c.errMu.Lock()
	if c.firstErr == nil {
		c.firstErr = err
	}
	c.errMu.Unlock()
}

func (c *jsConsumers) err() error {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	return c.firstErr
}

// stop ends every Consume() and waits (a bounded time) until its callbacks
// are done.
func (c *jsConsumers) stop() {
	for _, cc := range c.ccs {
		cc.Stop()
	}
	for _, cc := range c.ccs {
		select {
		case <-cc.Closed():
		case <-time.After(5 * time.Second):
		}
	}
	c.ccs = nil
}

func (c *jsConsumers) close() {
	c.stop()
	for _, nc := range c.conns {
		nc.Close()
	}
}

// latencies are every consumer's, together, and the same split at the
// stored timestamps.
func (c *jsConsumers) latencies() (all, toStored, fromStored []time.Duration) {
	for _, one := range c.each {
		one.mu.Lock()
		all = append(all, one.lat...)
		toStored = append(toStored, one.toStored...)
		fromStored = append(fromStored, one.fromStored...)
		one.mu.Unlock()
	}
	return all, toStored, fromStored
}

// seenSet records which message numbers arrived: the first delivery of a
// message and its redeliveries apart.
type seenSet struct {
	mu     sync.Mutex // every consumer's callback marks it
	bits   []uint64
	unique int64
	again  int64
}

// mark records message n and answers whether it is its first delivery.
func (s *seenSet) mark(n int64) bool {
	w, b := int(n/64), uint64(1)<<(n%64)
	s.mu.Lock()
	defer s.mu.Unlock()
	if w >= len(s.bits) {
		s.bits = append(s.bits, make([]uint64, w+1-len(s.bits)+len(s.bits)/2)...)
	}
	if s.bits[w]&b != 0 {
		s.again++
		return false
	}
	s.bits[w] |= b
	s.unique++
	return true
}

// counts are the messages seen once or more, and the deliveries after the first.
func (s *seenSet) counts() (unique, again int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unique, s.again
}
