package embedded

import "errors"

// ErrNoPostgres means no PostgreSQL server binaries (initdb, postgres) were found
// on PATH, through pg_config, or under /usr/lib/postgresql/*/bin.
var ErrNoPostgres = errors.New("no PostgreSQL server binaries found (install the Debian package: apt-get install -y postgresql)")

// ErrPostgresExited means the postmaster exited before it accepted connections.
var ErrPostgresExited = errors.New("postgres exited before accepting connections")

// ErrNATSListen means the embedded nats-server could not open a listener
// (its client or cluster address is in use, say); the error that wraps it
// carries nats-server's message, which names the address and the cause.
var ErrNATSListen = errors.New("embedded nats: cannot listen")

// ErrDataDirInUse means the postmaster exited because another live process
// holds the data directory: PostgreSQL's lock file, postmaster.pid, names a
// running process that is not the one this package started.
var ErrDataDirInUse = errors.New("embedded postgres: data directory in use")
