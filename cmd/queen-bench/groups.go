package main

import (
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"time"
)

// Fan-out (-groups N): N consumer groups read the same queues at once,
// each with -consumers consumers of its own, so every message is
// delivered N times. What a delivery costs is the figure fan-out asks
// for: the CPU divided by the deliveries of all groups.

// groupNames names the groups: -consume-group itself for one (as before
// -groups), <consume-group>-<i> for several.
func groupNames(base string, n int) []string {
	if n == 1 {
		return []string{base}
	}
	names := make([]string, n)
	for i := range names {
		names[i] = base + "-" + strconv.Itoa(i)
	}
	return names
}

// groupCounts counts the messages each group acknowledged.
type groupCounts struct {
	names    []string
	consumed []atomic.Int64
}

func newGroupCounts(names []string) *groupCounts {
	return &groupCounts{names: names, consumed: make([]atomic.Int64, len(names))}
}

// load reads every group's count at once.
func (g *groupCounts) load() []int64 {
	out := make([]int64, len(g.consumed))
	for i := range g.consumed {
		out[i] = g.consumed[i].Load()
	}
	return out
}

// total is the deliveries of all groups.
func total(counts []int64) int64 {
	var n int64
	for _, c := range counts {
		n += c
	}
	return n
}

// slowestLag is the lag of the group furthest behind: items pushed and
// not yet acknowledged by it. It is what a drain waits for.
func slowestLag(pushed int64, counts []int64) int64 {
	lag := int64(0)
	for i, c := range counts {
		if i == 0 || pushed-c > lag {
			lag = pushed - c
		}
	}
	return lag
}

// reportGroups prints each group's acknowledged items and rate, when there
// are several.
func reportGroups(out io.Writer, names []string, counts []int64, elapsed time.Duration) {
	if len(names) < 2 {
		return
	}
	for i, name := range names {
		fmt.Fprintf(out, "group      %-12s %d (%.0f/s)\n", name, counts[i], float64(counts[i])/elapsed.Seconds())
	}
}
