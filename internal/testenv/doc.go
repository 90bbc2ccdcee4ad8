// Package testenv gives every package's tests one real PostgreSQL and one real
// NATS per test binary, and a fresh database per test.
//
// A package opts in from its TestMain with `testenv.Main(m)`. The servers start
// lazily, on the first test that asks for them, and stop after m.Run returns, so
// a package whose tests need neither pays nothing. TEST_PG_DSN and TEST_NATS_URL
// reuse servers that are already running instead. There is no skip: a machine
// without PostgreSQL server binaries fails the test that needed them, with the
// install step in the message.
//
// It imports nothing of the project but embedded: the packages under test
// import it.
package testenv
