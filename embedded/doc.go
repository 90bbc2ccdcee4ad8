// Package embedded starts the servers a single-node queenbridge needs when it is
// given none: an in-process nats-server, and a private PostgreSQL cluster run from
// the PostgreSQL server binaries already installed on the machine.
//
// It imports nothing of the project. It must not know anything about queues,
// segments or the schema: it hands out a NATS client URL, the URL and
// password of the NATS server's leafnode listener (loopback, one user, a
// password made at each start: the bridge's own connection for messages a
// client may not send, JetStream deliveries; with accounts, one more user
// per named account, bound to it, since a leaf connection reaches one
// account), and a PostgreSQL DSN, and stops what it started.
//
// Ownership: a Postgres value owns one postmaster child process. The process is
// started from a goroutine locked to its OS thread, with the parent-death signal
// set, so the postmaster is told to shut down even when the Go process dies
// without calling Stop; Stop asks for a fast shutdown and waits for the process
// to exit. A NATS value owns one *server.Server.
//
// PostgreSQL refuses to run as root. When the effective uid is 0, initdb and
// postgres run as an unprivileged OS user (Config.OSUser, default "postgres",
// the account the Debian postgresql package creates), and the data directory is
// chowned to that user. Every ancestor of the data directory must be searchable
// by that user; when one is not (a checkout under /root, say), the cluster is
// placed under /var/lib/queenbridge instead and the returned Postgres says so in
// DataDir.
//
// A start that fails says why at once, with a sentinel of errors.go to
// branch on: a NATS listener that could not be opened (ErrNATSListen, with
// nats-server's message naming the address), a data directory whose lock
// another live postmaster holds (ErrDataDirInUse), no server binaries
// (ErrNoPostgres), a postmaster that exited for another reason
// (ErrPostgresExited, pointing at its server.log).
package embedded
