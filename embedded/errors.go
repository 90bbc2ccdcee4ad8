package embedded

import "errors"

// ErrNoPostgres means no PostgreSQL server binaries (initdb, postgres) were found
// on PATH, through pg_config, or under /usr/lib/postgresql/*/bin.
var ErrNoPostgres = errors.New("no PostgreSQL server binaries found (install the Debian package: apt-get install -y postgresql)")

// ErrPostgresExited means the postmaster exited before it accepted connections.
var ErrPostgresExited = errors.New("postgres exited before accepting connections")
