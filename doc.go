// Package queenbridge is a push bridge for a PostgreSQL-backed partitioned
// message log: it takes push requests over NATS and HTTP, fuses the writes
// of many requests across many partitions into one PostgreSQL transaction,
// and answers every item. The service is cmd/queen-bridge; the layout and
// the rules of which package may import which are in docs/architecture.md,
// which architecture_test.go holds the code to.
package queenbridge
