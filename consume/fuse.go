package consume

import (
	"context"
	"sync"

	"github.com/queenbridge/queenbridge/pgwire"
)

// maxAckStatements bounds the whole-batch acknowledgement statements in
// flight at once; what arrives while they run waits and goes in the next.
const maxAckStatements = 2

// ackFuser fuses whole-batch acknowledgements: those that arrive while a
// statement is in flight go together in the next one (one statement, one
// commit for many partitions and groups), and a lone one never waits. It
// has no goroutine of its own: the request that finds a statement slot free
// runs its batch in its own goroutine, and when it ends hands the slot,
// with everything queued meanwhile, to the first queued request's
// goroutine, which runs that batch and answers the others. Every answer
// follows the commit.
type ackFuser struct {
	run func(ctx context.Context, acks []pgwire.WholeAck) ([]pgwire.WholeAckResult, error)

	mu       sync.Mutex // guards inflight and queue; held only to count and to queue
	inflight int
	queue    []*fusedAcks
}

// fusedAcks is one request's part of a statement.
type fusedAcks struct {
	acks []pgwire.WholeAck
	res  []pgwire.WholeAckResult
	err  error
	// done is closed when res and err are set; lead carries the batch this
	// request's goroutine is to run (it holds a statement slot then).
	done chan struct{}
	lead chan []*fusedAcks
}

// do applies acks, fused with whatever else arrives meanwhile.
func (f *ackFuser) do(ctx context.Context, acks []pgwire.WholeAck) ([]pgwire.WholeAckResult, error) {
	me := &fusedAcks{acks: acks, done: make(chan struct{}), lead: make(chan []*fusedAcks, 1)}
	f.mu.Lock()
	if f.inflight < maxAckStatements {
		f.inflight++
		f.mu.Unlock()
		f.lead(ctx, []*fusedAcks{me})
		return me.res, me.err
	}
	f.queue = append(f.queue, me)
	f.mu.Unlock()
	select {
	case <-me.done:
	case batch := <-me.lead:
		f.lead(ctx, batch)
	}
	return me.res, me.err
}

// lead runs one batch holding a statement slot, answers it, then hands the
// slot on to what queued meanwhile (or frees it).
func (f *ackFuser) lead(ctx context.Context, batch []*fusedAcks) {
	var all []pgwire.WholeAck
	for _, b := range batch {
		all = append(all, b.acks...)
	}
	// One caller giving up must not fail the others' acknowledgements.
	res, err := f.run(context.WithoutCancel(ctx), all)
	for _, b := range batch {
		if err != nil {
			b.err = err
		} else {
			b.res, res = res[:len(b.acks)], res[len(b.acks):]
		}
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
