package main

import (
	"slices"
	"testing"
)

func TestGroupNames(t *testing.T) {
	t.Parallel()
	if got := groupNames("bench", 1); !slices.Equal(got, []string{"bench"}) {
		t.Errorf("one group: %q, want the -consume-group itself", got)
	}
	if got := groupNames("g4", 4); !slices.Equal(got, []string{"g4-0", "g4-1", "g4-2", "g4-3"}) {
		t.Errorf("four groups: %q", got)
	}
}

// The lag is the slowest group's: a drain waits for the last group.
func TestSlowestLagIsTheGroupFurthestBehind(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pushed int64
		counts []int64
		want   int64
	}{
		{10, []int64{10, 4, 7}, 6},
		{10, []int64{10, 10}, 0},
		{10, []int64{3}, 7},
		{0, []int64{5, 2}, -2}, // consume-only: nothing pushed, every group ahead
	} {
		if got := slowestLag(c.pushed, c.counts); got != c.want {
			t.Errorf("pushed %d, consumed %v: lag %d, want %d", c.pushed, c.counts, got, c.want)
		}
	}
	if total([]int64{3, 4, 5}) != 12 {
		t.Error("deliveries must add up over the groups")
	}
}

func TestConsumeModeRefusesWhatItCannotRun(t *testing.T) {
	t.Parallel()
	ok := options{target: "bridge", transport: "nats", clients: 1, items: 1, partitions: 1, queues: 1, consumers: 1, consumeBatch: 1,
		consumePartitions: 1, groups: 1}
	if err := checkConsume(ok); err != nil {
		t.Fatalf("a plain consume run refused: %v", err)
	}
	for name, change := range map[string]func(*options){
		"no groups":                   func(o *options) { o.groups = 0 },
		"a negative rate":             func(o *options) { o.rate = -5 },
		"a rate with nothing to push": func(o *options) { o.rate, o.consumeOnly = 100, true },
		"another target":              func(o *options) { o.target = "direct" },
	} {
		o := ok
		change(&o)
		if err := checkConsume(o); err == nil {
			t.Errorf("%s must be refused", name)
		}
	}
}
