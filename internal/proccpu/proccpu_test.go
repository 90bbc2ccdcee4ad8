package proccpu

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// burn spins for d of CPU time (not wall time), so the test holds on a busy
// machine too.
func burn(t *testing.T, d time.Duration) {
	t.Helper()
	start, err := Process(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for {
		for i := 0; i < 1_000_000; i++ {
			x += i
		}
		now, err := Process(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if now-start >= d {
			_ = x
			return
		}
	}
}

func TestProcessCountsOwnCPU(t *testing.T) {
	before, err := Process(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	burn(t, 100*time.Millisecond)
	after, err := Process(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after-before < 100*time.Millisecond {
		t.Fatalf("CPU went from %s to %s after burning 100ms", before, after)
	}
}

// A child that burns CPU and is reaped still counts in the parent's tree.
func TestTreeCountsReapedChildren(t *testing.T) {
	if os.Getenv("PROCCPU_BURN") == "1" {
		burn(t, 200*time.Millisecond)
		return
	}
	before, err := Tree(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestTreeCountsReapedChildren$")
	cmd.Env = append(os.Environ(), "PROCCPU_BURN=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	after, err := Tree(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// The child burned 200 ms of run time by its schedstat (nanoseconds);
	// Tree counts clock ticks. The kernel adds the child's user and system
	// time to the parent's cutime and cstime, each cut down to whole ticks
	// when read: up to two ticks less than the run time. So the bound is in
	// ticks, and two below 200 ms.
	if got, least := (after-before)/clockTick, 200*time.Millisecond/clockTick-2; got < least {
		t.Fatalf("tree CPU went from %s to %s (%d ticks) although a child burned 200ms (at least %d ticks)", before, after, got, least)
	}
	if ppid, err := Parent(os.Getpid()); err != nil || ppid != os.Getppid() {
		t.Fatalf("Parent = %d, %v; want %d", ppid, err, os.Getppid())
	}
}

// The nanosecond run time Process reads agrees with the kernel's clock-tick
// counts. The two are compared in ticks, within bounds that follow from how
// the kernel keeps them, so that no load can break them:
//
//   - /proc/PID/stat's utime and stime are the process's run time, split in
//     two and each cut down to whole ticks: their sum is at most the run
//     time and less than two ticks below it;
//   - a thread's schedstat lags its run time by what it ran since the last
//     scheduler tick (at most 10 ms: CONFIG_HZ is 100 or more) while it is on
//     a CPU, so the sum lags by at most one clock tick per CPU;
//   - the two files are not read at one instant: each run-time reading is
//     bracketed by a tick reading before and after it, and the bounds use
//     the outer pair for the upper one and the inner pair for the lower one,
//     whatever ran (the GC, other threads) between them;
//   - a thread that ends takes its schedstat along while stat keeps its
//     time, but the Go runtime ends no thread here (none is locked).
func TestProcessAgreesWithClockTicks(t *testing.T) {
	ticks := func() int64 {
		s, err := readStat(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		return s.utime + s.stime
	}
	if _, ok := runTime(os.Getpid()); !ok {
		t.Fatal("no /proc/self/task/*/schedstat: the kernel keeps no scheduler statistics")
	}
	a0, p0, b0 := ticks(), must(Process(os.Getpid())), ticks()
	burn(t, 300*time.Millisecond)
	a1, p1, b1 := ticks(), must(Process(os.Getpid())), ticks()
	lag := int64(runtime.NumCPU())
	lo, hi := a1-b0-2-lag, b1-a0+2+lag
	if run := p1 - p0; run < time.Duration(lo)*clockTick || run > time.Duration(hi)*clockTick {
		t.Fatalf("run time moved %s (%d ticks and %s), clock ticks between %d and %d", run, run/clockTick, run%clockTick, lo, hi)
	}
}

func must(d time.Duration, err error) time.Duration {
	if err != nil {
		panic(err)
	}
	return d
}
