package consume

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/pgwire"
)

// turnStore is a StreamStore that records the order of the calls it gets
// and answers a read with rows when rows says so. Reads and cycles come
// from the test's goroutines at once, hence the lock.
type turnStore struct {
	mu    sync.Mutex
	calls []string
	rows  map[string]bool // "whole" or "ripe": that kind of read finds a row
}

func (s *turnStore) StreamRegister(context.Context, pgwire.StreamRegistration) (pgwire.StreamRegistered, error) {
	return pgwire.StreamRegistered{}, errors.New("turnStore: no registrations")
}

func (s *turnStore) StreamState(_ context.Context, q pgwire.StreamStateQuery) ([]pgwire.StreamStateRow, error) {
	kind := "whole"
	if q.RipeAtOrBefore != nil {
		kind = "ripe"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, fmt.Sprintf("%s read of %d", kind, q.PartitionID))
	if !s.rows[kind] {
		return nil, nil
	}
	return []pgwire.StreamStateRow{{Key: "w1", Value: []byte(`{"windowEnd":1}`)}}, nil
}

func (s *turnStore) StreamCycle(_ context.Context, req pgwire.StreamCycleRequest) (pgwire.StreamCycleResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, fmt.Sprintf("cycle of %d", req.PartitionID))
	return pgwire.StreamCycleResult{}, nil
}

func (s *turnStore) order() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// newTurnRig is a rig whose Consumer serves streams from a turnStore, with
// hold as its turns' hold.
func newTurnRig(t *testing.T, hold time.Duration, rows ...string) (*rig, *turnStore) {
	t.Helper()
	r := newRig(t)
	s := &turnStore{rows: make(map[string]bool)}
	for _, kind := range rows {
		s.rows[kind] = true
	}
	r.c.cfg.Streams = s
	r.c.turns.hold = hold
	return r, s
}

var turnQuery = [16]byte{0x51, 7}

func (r *rig) read(t *testing.T, pid int64, ripe bool) {
	t.Helper()
	g := jsonapi.StreamStateGet{QueryID: turnQuery, PartitionID: pid}
	if ripe {
		at := float64(1)
		g.Prefix, g.RipeAtOrBefore = "tumble\x1f", &at
	}
	if status, body := r.c.ServeStreamState(context.Background(), tenant, g); status != jsonapi.StatusOK {
		t.Errorf("state read of %d: %d %s", pid, status, body)
	}
}

func (r *rig) cycle(t *testing.T, pid int64) {
	t.Helper()
	cy := jsonapi.StreamCycle{QueryID: turnQuery, PartitionID: pid, Ops: []jsonapi.StreamOp{{Delete: true, Key: "w1"}}, Release: true}
	if status, body := r.c.ServeStreamCycle(context.Background(), tenant, cy); status != jsonapi.StatusOK {
		t.Errorf("cycle of %d: %d %s", pid, status, body)
	}
}

// The Streams SDK's loop and idle flush of one partition each read the
// state and then cycle. Whichever reads second waits for the first one's
// cycle, so it sees the windows that cycle closed as gone.
func TestStateReadsOfTheOtherKindWaitForTheCycle(t *testing.T) {
	for _, first := range []string{"ripe", "whole"} {
		t.Run(first+" first", func(t *testing.T) {
			r, s := newTurnRig(t, time.Minute, "ripe", "whole")
			second := map[string]string{"ripe": "whole", "whole": "ripe"}[first]
			r.read(t, 4, first == "ripe")
			done := make(chan struct{})
			go func() {
				defer close(done)
				r.read(t, 4, second == "ripe")
			}()
			testkit.WaitFor(t, "the second read to wait for a cycle", 10*time.Second, func() bool { return r.c.turns.waited() == 1 })
			r.cycle(t, 4)
			<-done
			// The second read finds the row, waits, and reads again.
			want := []string{first + " read of 4", second + " read of 4", "cycle of 4", second + " read of 4"}
			if got := s.order(); !slices.Equal(got, want) {
				t.Fatalf("calls %q, want %q", got, want)
			}
		})
	}
}

// What does not race goes at once: a read that finds nothing neither
// waits nor holds a turn, reads of one kind share theirs, and other
// partitions have their own.
func TestStateReadsThatCannotCloseAWindowTwiceDoNotWait(t *testing.T) {
	r, s := newTurnRig(t, time.Minute, "whole")
	r.read(t, 4, true)  // a flush that found nothing ripe
	r.read(t, 4, false) // the loop
	r.read(t, 4, false) // the loop again, before its cycle (another worker taking the lease over)
	r.read(t, 4, true)  // a flush that found nothing ripe while the loop holds the turn
	r.read(t, 5, true)  // a flush of another partition
	if n := r.c.turns.waited(); n != 0 {
		t.Fatalf("%d reads waited, want none (calls %q)", n, s.order())
	}
	r.cycle(t, 4)
	r.read(t, 4, true) // the loop's cycle ended its turn
	if n := r.c.turns.waited(); n != 0 {
		t.Fatalf("%d reads waited after the cycle, want none", n)
	}
	// The cycle ended partition 4's turn; the reads that found nothing
	// left theirs.
	if n := r.c.turns.held(); n != 0 {
		t.Fatalf("%d turns held, want none", n)
	}
}

// A read whose cycle never comes (its worker stopped, or it had nothing to
// close) holds its turn only for the hold.
func TestATurnWithoutACycleEndsAfterItsHold(t *testing.T) {
	r, s := newTurnRig(t, 50*time.Millisecond, "ripe", "whole")
	r.read(t, 4, true)
	r.read(t, 4, false)
	if n := r.c.turns.waited(); n != 1 {
		t.Fatalf("%d reads waited, want 1", n)
	}
	want := []string{"ripe read of 4", "whole read of 4", "whole read of 4"}
	if got := s.order(); !slices.Equal(got, want) {
		t.Fatalf("calls %q, want %q", got, want)
	}
}

// A waiting read whose requester is gone ends with 503 and answers
// nothing of what it found before it waited.
func TestAWaitingReadEndsWithItsRequester(t *testing.T) {
	r, s := newTurnRig(t, time.Minute, "ripe", "whole")
	r.read(t, 4, true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		status, _ := r.c.ServeStreamState(ctx, tenant, jsonapi.StreamStateGet{QueryID: turnQuery, PartitionID: 4})
		done <- status
	}()
	testkit.WaitFor(t, "the read to wait", 10*time.Second, func() bool { return r.c.turns.waited() == 1 })
	cancel()
	if status := <-done; status != jsonapi.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", status)
	}
	if got := s.order(); len(got) != 2 {
		t.Fatalf("calls %q, want the first read and the second's look before it waited", got)
	}
}
