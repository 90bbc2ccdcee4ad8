package consume

import (
	"context"
	"sync"

	"github.com/queenbridge/queenbridge/pgwire"
)

// maxAckStatements bounds the whole-batch acknowledgement statements in
// flight at once, and maxClaimStatements the hot tail's claim statements;
// what arrives while they run waits and goes in the next.
const (
	maxAckStatements   = 2
	maxClaimStatements = 2
)

// fuser fuses the consumer state writes of concurrent requests (whole-batch
// acknowledgements, claims from the hot tail): those that arrive while its
// statements are in flight go together in the next one (one statement, one
// commit for many partitions and groups), and a lone one never waits. It
// has no goroutine of its own: the request that finds a statement slot free
// runs its batch in its own goroutine, and when it ends hands the slot,
// with everything queued meanwhile, to the first queued request's
// goroutine, which runs that batch and answers the others. Every answer
// follows the commit. A request whose caller gave up while it waited is
// answered with its context's error and none of it is written (a claim
// would hold messages nobody receives until its lease ends). run answers
// its inputs in order, one output each.
type fuser[In, Out any] struct {
	run   func(ctx context.Context, in []In) ([]Out, error)
	slots int

	mu       sync.Mutex // guards inflight and queue; held only to count and to queue
	inflight int
	queue    []*fused[In, Out]
}

// ackFuser fuses whole-batch acknowledgements (pgwire.AckWhole).
type ackFuser = fuser[pgwire.WholeAck, pgwire.WholeAckResult]

// claimFuser fuses claims of deliveries from the hot tail (pgwire.PopTail).
type claimFuser = fuser[pgwire.TailClaim, pgwire.PopResult]

// fused is one request's part of a statement.
type fused[In, Out any] struct {
	ctx context.Context
	in  []In
	out []Out
	err error
	// done is closed when out and err are set; lead carries the batch this
	// request's goroutine is to run (it holds a statement slot then).
	done chan struct{}
	lead chan []*fused[In, Out]
}

// do applies in, fused with whatever else arrives meanwhile.
func (f *fuser[In, Out]) do(ctx context.Context, in []In) ([]Out, error) {
	me := &fused[In, Out]{ctx: ctx, in: in, done: make(chan struct{}), lead: make(chan []*fused[In, Out], 1)}
	f.mu.Lock()
	if f.inflight < f.slots {
		f.inflight++
		f.mu.Unlock()
		f.lead(ctx, []*fused[In, Out]{me})
		return me.out, me.err
	}
	f.queue = append(f.queue, me)
	f.mu.Unlock()
	select {
	case <-me.done:
	case batch := <-me.lead:
		f.lead(ctx, batch)
	}
	return me.out, me.err
}

// lead runs one batch holding a statement slot, answers it, then hands the
// slot on to what queued meanwhile (or frees it).
func (f *fuser[In, Out]) lead(ctx context.Context, batch []*fused[In, Out]) {
	var all []In
	var run []*fused[In, Out]
	for _, b := range batch {
		if err := b.ctx.Err(); err != nil {
			b.err = err // gave up while it waited: nothing of it is written
			continue
		}
		run = append(run, b)
		all = append(all, b.in...)
	}
	if len(all) > 0 {
		// One caller giving up now must not fail the others' writes.
		res, err := f.run(context.WithoutCancel(ctx), all)
		for _, b := range run {
			if err != nil {
				b.err = err
			} else {
				b.out, res = res[:len(b.in)], res[len(b.in):]
			}
		}
	}
	for _, b := range batch {
		close(b.done)
	}
	f.mu.Lock()
	next := f.queue
	f.queue = nil
	if len(next) == 0 {
		f.inflight--
	}
	f.mu.Unlock()
	if len(next) > 0 {
		next[0].lead <- next
	}
}
