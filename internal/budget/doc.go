// Package budget is a count of bytes that goroutines take before they hold
// them and give back when done, waiting a bounded time for room: the
// bridge's bound on request bodies in memory (QUEEN_MAX_INFLIGHT_BYTES).
// It imports nothing of the project.
package budget
