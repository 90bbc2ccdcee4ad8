package client

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ProducerConfig says when a Producer pushes what it buffered.
type ProducerConfig struct {
	// MaxItems pushes a queue's batch when it holds this many. Default 500.
	MaxItems int
	// MaxBytes pushes a queue's batch when its payloads reach this size.
	// Default 1 MiB.
	MaxBytes int
	// Linger pushes a queue's batch this long after its first item at the
	// latest. Default 5ms.
	Linger time.Duration
	// Queued is how many batches of one queue may wait to be pushed before
	// Add blocks. Default 4.
	Queued int
	// OnResult receives each item's result, in the order the items of one
	// queue were added, on that queue's goroutine. err is Push's for the
	// batch (nil when it succeeded). Default: results are dropped.
	OnResult func(it Item, r Result, err error)
}

// Producer buffers items per queue and pushes them in batches.
type Producer struct {
	c   *Client
	cfg ProducerConfig

	// mu guards queues and closed: Add, the linger timers, Flush and Close
	// all reach them.
	mu     sync.Mutex
	queues map[string]*queueBuf
	closed bool
	wg     sync.WaitGroup // the queue goroutines
	// inflight counts batches handed to queue goroutines and not yet
	// answered; Flush waits for it to reach zero.
	inflight sync.WaitGroup
}

// queueBuf is one queue's buffer and the pipeline of its batches.
type queueBuf struct {
	items   []Item
	bytes   int
	timer   *time.Timer
	batches chan []Item // FIFO: one goroutine pushes them in order
}

// ErrClosed: Add after Close.
var ErrClosed = errors.New("client: producer closed")

// NewProducer starts a producer on c.
func (c *Client) NewProducer(cfg ProducerConfig) *Producer {
	if cfg.MaxItems <= 0 {
		cfg.MaxItems = 500
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 1 << 20
	}
	if cfg.Linger <= 0 {
		cfg.Linger = 5 * time.Millisecond
	}
	if cfg.Queued <= 0 {
		cfg.Queued = 4
	}
	if cfg.OnResult == nil {
		cfg.OnResult = func(Item, Result, error) {}
	}
	return &Producer{c: c, cfg: cfg, queues: map[string]*queueBuf{}}
}

// Add buffers an item. It blocks while the item's queue has Queued batches
// waiting (backpressure), until ctx ends.
func (p *Producer) Add(ctx context.Context, it Item) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	q := p.queues[it.Queue]
	if q == nil {
		q = &queueBuf{batches: make(chan []Item, p.cfg.Queued)}
		p.queues[it.Queue] = q
		p.wg.Add(1)
		go p.pushLoop(q)
	}
	q.items = append(q.items, it)
	q.bytes += len(it.Payload)
	if len(q.items) == 1 {
		name := it.Queue
		q.timer = time.AfterFunc(p.cfg.Linger, func() { p.flushQueue(context.Background(), name) })
	}
	var batch []Item
	if len(q.items) >= p.cfg.MaxItems || q.bytes >= p.cfg.MaxBytes {
		batch = p.take(q)
	}
	if batch == nil {
		p.mu.Unlock()
		return nil
	}
	// Handing over under the lock keeps the queue's batches in order; a
	// full pipeline blocks every Add until the queue's goroutine catches up.
	defer p.mu.Unlock()
	return p.hand(ctx, q, batch)
}

// take empties q's buffer into a batch; p.mu is held.
func (p *Producer) take(q *queueBuf) []Item {
	if len(q.items) == 0 {
		return nil
	}
	batch := q.items
	q.items, q.bytes = nil, 0
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
	return batch
}

// hand passes a batch to q's goroutine; p.mu is held.
func (p *Producer) hand(ctx context.Context, q *queueBuf, batch []Item) error {
	p.inflight.Add(1)
	select {
	case q.batches <- batch:
		return nil
	case <-ctx.Done():
		p.inflight.Done()
		for _, it := range batch {
			p.cfg.OnResult(it, Result{Status: Failed, TransactionID: it.TransactionID, Queue: it.Queue, Partition: it.Partition, Error: ctx.Err().Error()}, ctx.Err())
		}
		return ctx.Err()
	}
}

// flushQueue pushes what one queue holds (its linger timer, and Flush).
func (p *Producer) flushQueue(ctx context.Context, name string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.queues[name]
	if q == nil || p.closed { // Close hands over what is left itself
		return nil
	}
	if batch := p.take(q); batch != nil {
		return p.hand(ctx, q, batch)
	}
	return nil
}

// pushLoop pushes one queue's batches in order and delivers the results.
func (p *Producer) pushLoop(q *queueBuf) {
	defer p.wg.Done()
	for batch := range q.batches {
		rs, err := p.c.Push(context.Background(), batch...)
		for i, it := range batch {
			if it.TransactionID == "" {
				it.TransactionID = rs[i].TransactionID
			}
			p.cfg.OnResult(it, rs[i], err)
		}
		p.inflight.Done()
	}
}

// Flush pushes everything buffered and waits until every batch handed over
// so far is answered, or ctx ends.
func (p *Producer) Flush(ctx context.Context) error {
	p.mu.Lock()
	names := make([]string, 0, len(p.queues))
	for name := range p.queues {
		names = append(names, name)
	}
	p.mu.Unlock()
	for _, name := range names {
		if err := p.flushQueue(ctx, name); err != nil {
			return err
		}
	}
	done := make(chan struct{})
	go func() { p.inflight.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close refuses further items (ErrClosed), pushes everything buffered,
// waits for every batch to be answered (or ctx to end), then stops the
// queue goroutines. Idempotent.
func (p *Producer) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	p.closed = true
	var err error
	for _, q := range p.queues {
		if batch := p.take(q); batch != nil {
			if herr := p.hand(ctx, q, batch); err == nil {
				err = herr
			}
		}
	}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() { p.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		if err == nil {
			err = ctx.Err()
		}
	}
	p.mu.Lock()
	for _, q := range p.queues {
		close(q.batches) // the goroutine pushes what it holds, then ends
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}
