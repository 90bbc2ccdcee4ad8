package testkit

import (
	"testing"
	"time"
)

// WaitFor polls cond until it holds, and fails the test naming what it
// waited for once limit has passed. The pause between polls grows from 1 ms
// to 50 ms, so a quick condition is seen at once and a slow, dear one
// (a query, an HTTP scrape) is not asked hundreds of times a second.
func WaitFor(t testing.TB, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}
