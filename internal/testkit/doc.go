// Package testkit holds test helpers that need the project's own packages
// (testenv must not import them): committing a segment and reading back
// what a test stored, holding a partition's lock, running the queen-bridge
// binary, a NATS cluster and a JetStream client (jetstream.go); and the
// golden-body checks of the wire codecs' tests (golden.go), and of NATS
// status blocks (statusblock.go).
// Only _test.go files of other packages import it. It imports nothing of
// the project but embedded, pgwire and segment.
package testkit
