// Package pgwire is queenbridge's only door to PostgreSQL: the connection pool,
// the schema (numbered migrations and function files, embedded in the
// binary), the bundle call log_push_multi_v2 with typed parallel arrays
// through a cached prepared statement (typed arrays back), segment
// look-up, the consumer calls, and a transaction of Queen's transaction
// wire (Transaction, txn.go: its pushes through the bundle call and its
// acknowledgements through consumer_ack_v1, in one statement), and a
// requeue of dead letters (Requeue, requeue.go: the pushes as a
// transaction's, with no acknowledgement, and the dead letters' removal, in
// one statement), and the state of JetStream pull consumers (below), and
// the publish relay's side of PostgreSQL (below).
//
// It must not import fusion, spool or bridge, nor NATS, net/http or
// Prometheus: it knows nothing of requests, takes segment.Write values and
// answers segment.Result values.
//
// Failure model: PushBundle either returns one Result per Write, in input
// order, meaning the transaction committed (queued segments are durable,
// duplicate segments wrote nothing), or an error, meaning nothing of the
// bundle is known to be written. A result that cannot be decoded or does not
// match the input is an error (ErrBadResult), never a partial answer.
//
// Lock order: partition rows are locked by ascending log_partitions.id inside
// log_push_multi_v2 (its pre-lock); every other statement that locks
// partition rows must do the same. In full: queue rows, then JetStream
// consumer definitions (ascending id), then partition rows (ascending id),
// then consumer rows (ascending partition id, group), then dead letters
// (insert only).
//
// # The publish relay (publish.go, slot.go, migration 0019)
//
// publish/publish.sql is the SQL surface of queen.publish (two forms, the
// argument checks, the one transactional logical message each call
// writes) and the empty publication pgoutput needs. It is neither a
// migration nor a function file: the relay runs it in every database it
// watches, through the replication connection, after making sure the slot
// exists (a message written before the slot's consistent point would be
// lost), and only when its SHA-256, kept as the function's comment,
// differs. Slot is one logical replication connection: the goroutine that
// calls Next owns it (it answers keepalives and reports the confirmed
// position there); Confirm is an atomic any goroutine may store. A slot
// another connection streams answers ErrSlotBusy: the single active
// reader is the lock between bridges. Readiness names what a database
// lacks (wal_level, a free slot, WAL senders, REPLICATION); RelayPosition
// and SaveRelayPosition keep each slot's relayed position in
// queen.publish_positions, which never moves back.
//
// # JetStream consumers (migration 0018)
//
// A JetStream consumer is a consumer group of its stream's queue: its name
// is the group, its ack floor on a partition the group's cursor_offset.
// What is durable besides: its definition (queen.jetstream_consumers) and,
// on its cursor rows, the offsets acknowledged above the floor and the
// delivery counts of offsets delivered more than once. The statements,
// each one round trip under withConn:
//
//   - PutConsumer (jetstream_consumer_put_v1): create, update or either;
//     a created consumer's cursors seeded by its deliver policy in the
//     same transaction, and its subscription, which seeds later partitions.
//   - GetConsumer, ListConsumers, DeleteConsumer (the definition, its
//     cursor rows and subscription), TouchConsumers (last active).
//   - ConsumerPartitions (js_read.go): every partition of the consumer's
//     queue with its last and first retained offset and the consumer's
//     floor (the subscription's start where no cursor row is yet),
//     acknowledged offsets and delivery counts. Reads only.
//   - ReadAfter (js_read.go): the messages after offsets of many
//     partitions, bounded per range by messages and bytes.
//   - CommitAcks (js_acks.go): the acknowledgement state of many (consumer,
//     partition) pairs and their dead letters, in one statement and one
//     commit, joined with what is stored (consumer_acks_merge_v1: floors
//     never move back, sets only grow), so an update from a bridge that
//     lost the consumer undoes nothing. It holds the definitions (FOR KEY
//     SHARE, ascending id) before it locks the cursor rows in ascending
//     (partition, group), so a consumer deleted meanwhile gets no row back.
//
// Concurrency: DB is safe for concurrent use; pgxpool owns the connections.
// Every statement runs under withConn (conn.go): bounded by AcquireTimeout
// while it waits for a connection and by StatementTimeout while it runs,
// and run again, a bounded number of times, when PostgreSQL killed it to
// break a deadlock (40P01) or for a serialization failure (40001), or its
// connection was lost before it was sent, and nothing of it committed
// (retry.go). Migrate alone is not (migrate.go says why); it waits its turn
// for its locks instead (migrate_wait.go), watched by a goroutine of its
// own that it stops before it returns.
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
// (TestSchemaSnapshot; regenerate with go test ./pgwire -run
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
package pgwire
