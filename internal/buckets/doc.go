// Package buckets is the one rule that bridges and partition-aware clients
// must compute alike: which ownership bucket a partition falls into. It
// imports nothing of the project, so that the client, which imports
// nothing of the service, can share it.
//
// Goroutines: none; Of is a pure function.
package buckets
