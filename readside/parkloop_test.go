package readside

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testkit"
)

// looker is a look for lookParked that counts its calls and finds
// something (the number of its call) once found is set.
type looker struct {
	calls atomic.Int32
	found atomic.Bool
	each  func() // run on every call, before it answers; may be nil
}

func (l *looker) look() (int, bool, error) {
	n := l.calls.Add(1)
	if l.each != nil {
		l.each()
	}
	if l.found.Load() {
		return int(n), true, nil
	}
	return 0, false, nil
}

type lookResult struct {
	v   int
	err error
}

// parkLook runs lookParked on a goroutine of its own and waits until it is
// parked: it has looked twice (once before parking, once after) and counts
// among the parked reads.
func parkLook(t *testing.T, r *Reads, ctx context.Context, k Key, wait time.Duration, l *looker) <-chan lookResult {
	t.Helper()
	parkedBefore := r.Stats().Parked
	done := make(chan lookResult, 1)
	go func() {
		v, err := lookParked(r, ctx, k, wait, "read", l.look)
		done <- lookResult{v, err}
	}()
	testkit.WaitFor(t, "the look to park", time.Minute, func() bool {
		return l.calls.Load() == 2 && r.Stats().Parked == parkedBefore+1
	})
	return done
}

// answer waits for a parked look's answer; what names what should have
// answered it.
func answer(t *testing.T, done <-chan lookResult, what string) lookResult {
	t.Helper()
	select {
	case res := <-done:
		return res
	case <-time.After(time.Minute):
		t.Fatalf("%s did not answer the parked look", what)
		return lookResult{}
	}
}

// An announcement of its partition wakes a parked look, which looks again
// and answers what it found; an announcement of any partition of a queue
// wakes a look parked on the queue (an any-partition pop).
func TestAnnouncementWakesAParkedLook(t *testing.T) {
	t.Parallel()
	for _, hotlist := range []bool{true, false} {
		r := startReads(t, Config{DB: newDB(t), DisableHotlist: !hotlist})
		for _, parkOn := range []Key{{Queue: "q", Partition: "p"}, {Queue: "q"}} {
			l := &looker{}
			done := parkLook(t, r, context.Background(), parkOn, time.Minute, l)
			l.found.Store(true)
			r.Announce([]Key{{Queue: "q", Partition: "p"}})
			if res := answer(t, done, "the announcement"); res.err != nil || res.v != 3 {
				t.Fatalf("hot-list %v, parked on %+v: %+v after %d looks, want the third look's", hotlist, parkOn, res, l.calls.Load())
			}
		}
		if st := r.Stats(); st.Parked != 0 || st.Wakes < 2 {
			t.Fatalf("hot-list %v: %+v", hotlist, st)
		}
	}
}

// parked.wake signals the reads parked on the partition and the pops parked
// on its queue, nobody else, and at most one pending wake per read.
func TestWakeReachesThePartitionAndItsQueue(t *testing.T) {
	t.Parallel()
	p := newParked()
	tenant := [16]byte{9}
	k := Key{Tenant: tenant, Queue: "q", Partition: "p"}
	read := p.park(k)
	pop := p.park(Key{Tenant: tenant, Queue: "q"})
	others := []*waiter{
		p.park(Key{Tenant: tenant, Queue: "q", Partition: "p2"}),
		p.park(Key{Tenant: tenant, Queue: "q2"}),
		p.park(Key{Queue: "q", Partition: "p"}),
		p.park(Key{Queue: "q"}),
	}
	if n := p.n.Load(); n != 6 {
		t.Fatalf("%d parked, want 6", n)
	}
	p.wake(k)
	p.wake(k)
	for name, w := range map[string]*waiter{"read": read, "pop": pop} {
		if len(w.ch) != 1 {
			t.Fatalf("%s parked on the partition's key holds %d wakes, want 1", name, len(w.ch))
		}
	}
	for i, w := range others {
		if len(w.ch) != 0 {
			t.Fatalf("other %d was woken", i)
		}
	}
	if w := p.wakes.Load(); w != 2 {
		t.Fatalf("%d wakes counted, want 2", w)
	}
	p.unpark(k, read)
	p.unpark(Key{Tenant: tenant, Queue: "q"}, pop)
	if n := p.n.Load(); n != 4 || len(p.m) != 4 {
		t.Fatalf("after unparking two: %d parked over %d keys", n, len(p.m))
	}
}

// Stop and Unpark answer a parked look at once, empty; after Unpark a look
// with a wait does not park at all.
func TestStopAndUnparkAnswerAtOnce(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	k := Key{Queue: "q", Partition: "p"}

	r := startReads(t, Config{DB: db})
	l := &looker{}
	done := parkLook(t, r, context.Background(), k, time.Hour, l)
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if res := answer(t, done, "Stop"); res.err != nil || res.v != 0 || l.calls.Load() != 2 {
		t.Fatalf("after Stop: %+v after %d looks", res, l.calls.Load())
	}
	if err := r.Stop(context.Background()); err != nil {
		t.Fatalf("a second Stop: %v", err)
	}

	r = startReads(t, Config{DB: db})
	l = &looker{}
	done = parkLook(t, r, context.Background(), k, time.Hour, l)
	r.Unpark()
	r.Unpark() // idempotent
	if res := answer(t, done, "Unpark"); res.err != nil || res.v != 0 || l.calls.Load() != 2 {
		t.Fatalf("after Unpark: %+v after %d looks", res, l.calls.Load())
	}
	l = &looker{}
	if v, err := lookParked(r, context.Background(), k, time.Hour, "read", l.look); err != nil || v != 0 || l.calls.Load() != 1 {
		t.Fatalf("a look after Unpark: %d %v after %d looks", v, err, l.calls.Load())
	}
	if p := r.Stats().Parked; p != 0 {
		t.Fatalf("%d parked after Unpark", p)
	}
}

// The caller's context ending answers a parked look with an error that
// names the call and wraps the context's; the wait ending answers empty;
// no wait looks once; a look's error is answered at once.
func TestParkedLookEnds(t *testing.T) {
	t.Parallel()
	r := startReads(t, Config{DB: newDB(t)})
	k := Key{Queue: "q", Partition: "p"}

	ctx, cancel := context.WithCancel(context.Background())
	l := &looker{}
	done := parkLook(t, r, ctx, k, time.Hour, l)
	cancel()
	if res := answer(t, done, "the context's end"); !errors.Is(res.err, context.Canceled) || !strings.Contains(res.err.Error(), "read abandoned") {
		t.Fatalf("abandoned: %+v", res)
	}

	l = &looker{}
	if v, err := lookParked(r, context.Background(), k, 20*time.Millisecond, "read", l.look); err != nil || v != 0 {
		t.Fatalf("a wait that ends: %d %v after %d looks", v, err, l.calls.Load())
	}

	l = &looker{}
	if v, err := lookParked(r, context.Background(), k, 0, "read", l.look); err != nil || v != 0 || l.calls.Load() != 1 {
		t.Fatalf("no wait: %d %v after %d looks", v, err, l.calls.Load())
	}

	boom := errors.New("boom")
	calls := 0
	if _, err := lookParked(r, context.Background(), k, time.Hour, "read", func() (int, bool, error) { calls++; return 0, false, boom }); !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("a look's error: %v after %d looks", err, calls)
	}
	if p := r.Stats().Parked; p != 0 {
		t.Fatalf("%d still parked", p)
	}
}

// A wake that finds nothing makes the next wait a little before it is
// heeded (minSettle, doubling up to maxSettle), wakes meanwhile coalescing:
// a look woken without end (every look announces its own partition again)
// looks only a handful of times during its wait, not once per wake.
//
// The bound is counted, not timed: a look follows each pause, and pauses
// never end early, so within the wait there are at most as many looks
// after the first empty wake as there are pauses whose running sum stays
// below the wait; the look after the wait's end answers.
func TestEmptyWakesArePaced(t *testing.T) {
	t.Parallel()
	r := startReads(t, Config{DB: newDB(t), DisableHotlist: true})
	k := Key{Queue: "q", Partition: "p"}
	const wait = time.Second
	l := &looker{}
	l.each = func() { r.parked.wake(k) }
	if v, err := lookParked(r, context.Background(), k, wait, "read", l.look); err != nil || v != 0 {
		t.Fatalf("%d %v", v, err)
	}
	pauses := 0
	for settle, sum := minSettle, minSettle; sum < wait; settle = min(2*settle, maxSettle) {
		pauses++
		sum += min(2*settle, maxSettle)
	}
	// Before parking, after parking, after the first (unpaced) wake, one
	// per pause, and the one that finds the wait over.
	bound := int32(3 + pauses + 1)
	if n := l.calls.Load(); n < 3 || n > bound {
		t.Fatalf("%d looks during a wait of %v woken without end, want 3..%d", n, wait, bound)
	}
	if w := r.Stats().Wakes; w < uint64(l.calls.Load()) {
		t.Fatalf("%d wakes for %d looks", w, l.calls.Load())
	}
}

// A caller that runs its own loop over Parking (as a pop does) is parked
// only from its first Again on, looks again when its key is announced,
// unparks on Close, and hears of its context's end as an error naming the
// call; the read side runs none of its code.
func TestParkingLetsTheCallerLoop(t *testing.T) {
	t.Parallel()
	r := startReads(t, Config{DB: newDB(t), DisableHotlist: true})
	k := Key{Queue: "q"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := r.Park(ctx, k, time.Hour, "pop")
	if n := r.Stats().Parked; n != 0 {
		t.Fatalf("%d parked before the first Again", n)
	}
	if again, err := p.Again(); !again || err != nil {
		t.Fatalf("the first Again: %v %v, want to look again at once", again, err)
	}
	if n := r.Stats().Parked; n != 1 {
		t.Fatalf("%d parked after the first Again", n)
	}
	woke := make(chan error, 1)
	go func() {
		again, err := p.Again()
		if !again {
			err = errors.Join(errors.New("Again said stop"), err)
		}
		woke <- err
	}()
	r.Announce([]Key{{Queue: "q", Partition: "p"}})
	select {
	case err := <-woke:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("an announcement of the queue did not wake the parked caller")
	}
	go func() {
		again, err := p.Again()
		if again {
			err = errors.New("Again said look again after the context ended")
		}
		woke <- err
	}()
	cancel()
	select {
	case err := <-woke:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "pop abandoned") {
			t.Fatalf("after the context's end: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the context's end did not answer the parked caller")
	}
	p.Close()
	p.Close()
	if n := r.Stats().Parked; n != 0 {
		t.Fatalf("%d parked after Close", n)
	}
}
