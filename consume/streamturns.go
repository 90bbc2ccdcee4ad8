package consume

import (
	"context"
	"sync"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// A Streams SDK worker reads a partition's window state, works on it, and
// commits a cycle that deletes the windows it closed and pushes their
// results: a read-modify-write over two requests. It runs two of them for
// one partition at once, without waiting for each other: its processing
// loop (a read of the whole state, then a cycle with the batch's
// acknowledgement) and its idle flush (a read of the ripe windows only,
// then a cycle that closes them). When both reads come before either
// cycle, both close the same window and its result is pushed twice; the
// database cannot tell, since each cycle alone is sound.
//
// stateTurns makes the two take turns. A read of one kind (whole, or ripe)
// of a (query, partition) that finds rows waits while a read of the other
// kind has found rows there and no cycle of that (query, partition) has
// finished since, for at most turnHold, and then reads again. A read that
// finds nothing answers at once: it has nothing to close twice. Reads of one kind do not wait for each other: the
// SDK never runs two loops, or two flushes, of one partition, and a session
// window's flush reads as its loop does (and cycles only when it closed a
// session). The turns are this bridge's: a worker whose two requests reach
// two bridges is not served by them.

// turnHold is how long a read that found rows holds its turn when no cycle
// follows it (a worker that died, or found nothing to close).
const turnHold = 2 * time.Second

// maxTurns is how many turns are kept before those whose hold ran out are
// swept; below it they end when their (query, partition) is next read.
const maxTurns = 256

type turnKey struct {
	tenant    tenancy.TenantID
	query     [16]byte
	partition int64
}

// turn is the reads of one kind of a (query, partition) that hold it.
type turn struct {
	ripe    bool // ripe reads (a flush's), or whole reads (a loop's)
	holders int  // reads still running; one that found nothing leaves
	until   time.Time
	done    chan struct{} // closed when the turn ends
}

// stateTurns are the turns of the streams routes' reads. The state reads
// and cycles of many requests reach them at once, hence the lock; it is
// held for map work only, never while waiting or across a database call.
type stateTurns struct {
	hold time.Duration // turnHold; shorter in tests

	mu    sync.Mutex
	m     map[turnKey]*turn
	waits uint64 // reads that waited for the other kind's turn
}

// take waits until no read of the other kind holds k (or ctx ends), then
// holds it for a read of its kind; the caller passes the turn to leave
// when the read found nothing. With wait false it does not wait: nil when
// the other kind holds k.
func (s *stateTurns) take(ctx context.Context, k turnKey, ripe, wait bool) (*turn, error) {
	counted := false
	for {
		now := time.Now()
		s.mu.Lock()
		if s.m == nil {
			s.m = make(map[turnKey]*turn)
		}
		if len(s.m) >= maxTurns {
			s.sweepLocked(now)
		}
		t := s.m[k]
		if t != nil && !now.Before(t.until) {
			s.endLocked(k, t)
			t = nil
		}
		switch {
		case t == nil:
			t = &turn{ripe: ripe, until: now.Add(s.holdFor()), done: make(chan struct{})}
			s.m[k] = t
			fallthrough
		case t.ripe == ripe:
			t.holders++
			t.until = now.Add(s.holdFor())
			s.mu.Unlock()
			return t, nil
		}
		if !wait {
			s.mu.Unlock()
			return nil, nil
		}
		if !counted {
			s.waits++
			counted = true
		}
		done, left := t.done, t.until.Sub(now)
		s.mu.Unlock()
		timer := time.NewTimer(left)
		select {
		case <-done:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		}
		timer.Stop()
	}
}

// leave lets go of a read's hold on t: the read found nothing, so there is
// nothing its cycle could close twice. The last holder ends the turn.
func (s *stateTurns) leave(k turnKey, t *turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[k] != t {
		return // ended already
	}
	if t.holders--; t.holders == 0 {
		s.endLocked(k, t)
	}
}

// cycled ends k's turn: a cycle of that (query, partition) has finished,
// committed or not, so what its read found is either gone or still there
// for the next read to see.
func (s *stateTurns) cycled(k turnKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.m[k]; t != nil {
		s.endLocked(k, t)
	}
}

// sweepLocked ends the turns whose hold ran out with no read or cycle of
// theirs since (workers that stopped).
func (s *stateTurns) sweepLocked(now time.Time) {
	for k, t := range s.m {
		if !now.Before(t.until) {
			s.endLocked(k, t)
		}
	}
}

func (s *stateTurns) endLocked(k turnKey, t *turn) {
	delete(s.m, k)
	close(t.done)
}

func (s *stateTurns) holdFor() time.Duration {
	if s.hold > 0 {
		return s.hold
	}
	return turnHold
}

// held is how many (query, partition)s have a turn held now.
func (s *stateTurns) held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// waited is how many reads have waited for the other kind's turn.
func (s *stateTurns) waited() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waits
}

// turnError is a read that ended while it waited for its turn.
type turnError struct{ err error }

func (e *turnError) Error() string {
	return "the state read was not answered: it ended while a cycle of its (query, partition) was awaited: " + e.err.Error()
}

func (e *turnError) Unwrap() error { return e.err }
