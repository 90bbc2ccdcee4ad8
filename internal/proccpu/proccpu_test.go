package proccpu

import (
	"os"
	"os/exec"
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
	if after-before < 200*time.Millisecond {
		t.Fatalf("tree CPU went from %s to %s although a child burned 200ms", before, after)
	}
	if ppid, err := Parent(os.Getpid()); err != nil || ppid != os.Getppid() {
		t.Fatalf("Parent = %d, %v; want %d", ppid, err, os.Getppid())
	}
}

// The nanosecond run time Process reads agrees with the kernel's clock-tick
// counts, to within a few ticks.
func TestProcessAgreesWithClockTicks(t *testing.T) {
	ticks := func() time.Duration {
		s, err := readStat(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		return time.Duration(s.utime+s.stime) * clockTick
	}
	if _, ok := runTime(os.Getpid()); !ok {
		t.Fatal("no /proc/self/task/*/schedstat: the kernel keeps no scheduler statistics")
	}
	p0, t0 := must(Process(os.Getpid())), ticks()
	burn(t, 300*time.Millisecond)
	p1, t1 := must(Process(os.Getpid())), ticks()
	if diff := (p1 - p0) - (t1 - t0); diff > 50*time.Millisecond || diff < -50*time.Millisecond {
		t.Fatalf("run time moved %s, clock ticks %s", p1-p0, t1-t0)
	}
}

func must(d time.Duration, err error) time.Duration {
	if err != nil {
		panic(err)
	}
	return d
}
