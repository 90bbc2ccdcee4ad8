// Package pgwire is queenbridge's only door to PostgreSQL: the connection pool,
// the connection discipline, the statements, the bundle call log_push_multi_v2 with typed parallel arrays
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
// # The publish relay (publish.go, slot.go, migrations 0019 and 0021)
//
// sql/publish_surface.sql is the SQL surface of queen.publish (two forms, the
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
// queen.publish_positions, which never moves back. Segments that carry the
// relay's marks (segment.Write.Marks) take the statements an ordinary
// bundle takes with one more step, the marks' upsert into
// queen.publish_marks (knownMarkedSQL, pushMarkedSQL), so a mark is stored
// exactly with its segment; RelayMarks reads them back.
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
// (retry.go). Migrate alone is not (pgwire/schema/migrate.go says why); it
// waits its turn for its locks instead, watched by a goroutine of its own
// that it stops before it returns.
//
// # The schema
//
// The queen schema (numbered migrations, function files, their runner and
// the snapshot) is package pgwire/schema; Migrate runs it on db's pool,
// with Config.MigrationLockTimeout and Config.OnMigrationWait. pgwire's
// statements call the functions the schema's files define, by their _vN
// names (pgwire/schema/doc.go has the rule).
//
// # Statements
//
// A statement of more than about ten lines lives in sql/<what it
// does>.sql, embedded and read once into a package variable
// (statements.go), so that it is prepared once per connection as a
// constant was: pgx caches a prepared statement by its text. The bundle's
// statements keep BundleTag at the front of their text, in Go.
//
// # What it returns
//
// The values the rooms that read storage take through their own Store
// interfaces (a stored message, a queue's row, the switches, a retention
// or purge step's result, a group's lag, the message routes' rows, the
// failure counters) are package storage's types, so that those rooms need
// not import pgwire; Message and QueueMode keep a name here for the
// statements and the rooms that still import pgwire.
//
// Size: above the house's 2,000 lines, because every concern's statements
// share the connection discipline, which is DB's unexported methods;
// docs/architecture.md ("Sizes and hubs") says how it splits.
package pgwire
