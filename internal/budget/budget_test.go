package budget

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// The waiting tests run in a synctest bubble: its clock moves only when
// every goroutine in it waits, so a Take that gives up at its wait does so
// at once, and synctest.Wait says when a taker is waiting.

func TestTryTakeGiveAndInUse(t *testing.T) {
	t.Parallel()
	b := New(100)
	steps := []struct {
		op    string // "take" or "give"
		n     int64
		ok    bool // what TryTake answers
		inUse int64
	}{
		{"take", 60, true, 60},
		{"take", 50, false, 60},
		{"take", 40, true, 100},
		{"take", 1, false, 100},
		{"give", 60, false, 40},
		{"give", 0, false, 40},
		{"give", -5, false, 40},
		{"take", 0, true, 40},
		{"give", 40, false, 0},
		{"give", 10, false, 0}, // more than was taken: the budget stays whole
		{"take", 100, true, 100},
	}
	for i, s := range steps {
		if s.op == "take" {
			if ok := b.TryTake(s.n); ok != s.ok {
				t.Errorf("step %d: TryTake(%d) = %v", i, s.n, ok)
			}
		} else {
			b.Give(s.n)
		}
		if n := b.InUse(); n != s.inUse {
			t.Errorf("step %d: InUse %d, want %d", i, n, s.inUse)
		}
	}
}

// waiters is the takers waiting now.
func waiters(b *Bytes) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiting
}

// A request bigger than the whole budget takes all of it, once all of it
// is free; giving it back frees all of it.
func TestARequestBiggerThanTheBudgetTakesAllOfIt(t *testing.T) {
	t.Parallel()
	b := New(100)
	if !b.TryTake(1) || b.TryTake(500) {
		t.Fatal("a request bigger than the budget went through while some was taken")
	}
	b.Give(1)
	if !b.TryTake(500) || b.InUse() != 100 {
		t.Fatalf("TryTake(500) of a free budget of 100: in use %d", b.InUse())
	}
	if b.TryTake(1) {
		t.Error("took a byte of a budget that is all in use")
	}
	b.Give(500)
	if b.InUse() != 0 {
		t.Errorf("in use %d after giving it back", b.InUse())
	}
	if !b.Take(context.Background(), 1000, 0) || b.InUse() != 100 {
		t.Errorf("Take bigger than the budget: in use %d", b.InUse())
	}
}

func TestTakeWaitsForAGive(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := New(10)
		b.TryTake(10)
		got := make(chan bool, 2)
		for i := 0; i < 2; i++ {
			go func() { got <- b.Take(context.Background(), 5, time.Hour) }()
		}
		synctest.Wait()
		if len(got) != 0 || waiters(b) != 2 {
			t.Fatalf("with nothing free: %d answers, %d waiting", len(got), waiters(b))
		}
		b.Give(10) // enough for both: both wake
		for range 2 {
			if !<-got {
				t.Fatal("a taker gave up though bytes came free")
			}
		}
		if b.InUse() != 10 || waiters(b) != 0 {
			t.Errorf("in use %d, %d waiting", b.InUse(), waiters(b))
		}
	})
}

// A Give too small for a waiting taker wakes it, and it waits again.
func TestTakeWaitsAgainAfterAGiveTooSmall(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := New(10)
		b.TryTake(10)
		got := make(chan bool, 1)
		go func() { got <- b.Take(context.Background(), 8, time.Hour) }()
		synctest.Wait()
		b.Give(5)
		synctest.Wait()
		if len(got) != 0 || waiters(b) != 1 {
			t.Fatalf("after 5 of 8 bytes came free: %d answers, %d waiting", len(got), waiters(b))
		}
		b.Give(3)
		if !<-got || b.InUse() != 10 {
			t.Errorf("in use %d", b.InUse())
		}
	})
}

func TestTakeGivesUpAtItsWait(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := New(10)
		b.TryTake(4)
		start := time.Now()
		if b.Take(context.Background(), 7, time.Second) {
			t.Fatal("took 7 of 6 free bytes")
		}
		if waited := time.Since(start); waited != time.Second {
			t.Errorf("gave up after %v", waited)
		}
		if b.InUse() != 4 || waiters(b) != 0 {
			t.Errorf("in use %d, %d waiting", b.InUse(), waiters(b))
		}
		// What is free is taken without waiting, whatever the wait.
		if !b.Take(context.Background(), 6, 0) || b.InUse() != 10 {
			t.Errorf("in use %d", b.InUse())
		}
	})
}

func TestTakeGivesUpWithItsContext(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := New(10)
		b.TryTake(10)
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan bool, 1)
		start := time.Now()
		go func() { got <- b.Take(ctx, 1, time.Hour) }()
		synctest.Wait()
		cancel()
		if <-got {
			t.Fatal("took bytes that never came free")
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("gave up after %v, not when its context ended", waited)
		}
		if waiters(b) != 0 {
			t.Errorf("%d waiting", waiters(b))
		}
		// A context already done still takes what is free.
		b.Give(1)
		if !b.Take(ctx, 1, time.Hour) {
			t.Error("a done context refused a free byte")
		}
	})
}
