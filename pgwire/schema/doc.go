// Package schema is the queen schema and its runner: the numbered
// migrations (migrations/NNNN_name.sql) and the function files
// (functions/<name>.sql), embedded in the binary; Migrate applies them to a
// database, recording what it applied and the SHA-256 of every function
// file; the snapshot and upgrade tests hold them to what a fresh database
// and an upgraded one end with.
//
// It imports nothing of the project. It must not import pgwire (pgwire
// imports it: DB.Migrate calls Migrate on its pool), nor bridge, nor NATS,
// net/http or Prometheus: it knows the queen schema and nothing of the
// statements that use it. It is given a pool and
// takes one connection of it for a run.
//
// Concurrency: Migrate runs on its caller's goroutine, on a connection of
// its own taken out of the pool, without a statement timeout (a migration
// may rewrite every row of a table); ctx bounds it. It is not retried as
// pgwire's statements are: every step instead waits its turn for its locks
// with a short lock_timeout and tries again (migrate_wait.go), watched by
// a goroutine of its own that it stops before the step returns. Several
// bridges migrating at once serialise on an advisory lock: each migration
// is applied exactly once.
//
// Failure model: the numbered migrations that run inside a transaction
// and the function files run in one, so an error leaves nothing of them
// applied; an index migration runs outside one, statement by statement,
// each idempotent, and is recorded only once all of them ran.
//
// # The schema: migrations and function files
//
// migrations/NNNN_name.sql are applied once each, in order, and recorded in
// queen.schema_migrations. They hold tables, columns, indexes, constraints,
// triggers, seed rows, and the dropping of functions. A file of index
// statements alone runs after the others, outside a transaction,
// CONCURRENTLY; a strong lock on a table a file did not create is said in
// its header (migrate_plan.go). Once a release has applied a migration, its
// text does not change (TestAppliedMigrationsDoNotChange): a change is a new
// migration.
//
// functions/<name>.sql each hold the current text of one function,
// queen.<name>, as one CREATE OR REPLACE FUNCTION. Migrate applies them after
// the migrations, in the same transaction, whenever a file's SHA-256 is not
// the one queen.schema_functions recorded (or the function is missing), so a
// function is changed by editing its file. A bridge that does not know every
// applied migration is older than the one that migrated last and applies no
// function file; an older bridge's calls keep working, since every function
// it may call stays (TestOlderBridgesFunctionsStayCallable; docs/operations.md
// says how far back a bridge may be). testdata/schema.txt is the schema a fresh database gets
// (TestSchemaSnapshot; regenerate with go test ./pgwire/schema -run
// TestSchemaSnapshot -update), and a database upgraded from an earlier step
// ends with the same (TestUpgradeEndsWithTheFreshSchema).
//
// # Function names and rolling upgrades: the _vN rule
//
// During a rolling upgrade bridges of two versions run against one database,
// and the first new bridge to start migrates it. So every function keeps,
// under its name, what the bridges that call it rely on:
//
//   - In place (edit functions/<name>.sql, same name) when every bridge that
//     may call it sees no difference it depends on: a faster plan, a bug fix,
//     a new optional argument at the end (with a DEFAULT), a new OUT column
//     that callers selecting their own columns do not see. Both texts must
//     suit both versions: when the new version adds no migration, an old
//     bridge that restarts during the upgrade puts its own text back, until
//     a new bridge next starts.
//   - Under a new name, _v(N+1), when the arguments, the answer or the
//     behaviour a caller relies on change: the new bridge calls the new
//     name, old bridges keep calling the old one, unchanged. The new name is
//     a new file; the old file stays as it is.
//   - CREATE OR REPLACE cannot change a function's result type, its OUT
//     columns or its argument names. Where an in-place change needs that, a
//     new migration drops the function and the file makes it anew in the
//     same transaction.
//   - An old name is dropped by a later migration (with its file removed)
//     only once no released bridge calls it; migration 0009 dropped
//     log_push_multi_v1, log_push_one_v1 and log_probe_v1 so.
package schema
