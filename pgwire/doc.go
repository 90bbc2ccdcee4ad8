// Package pgwire is queenbridge's only door to PostgreSQL: the connection pool,
// the schema migrations (SQL files embedded with go:embed), the bundle call
// log_push_multi_v2 with typed parallel arrays through a cached prepared
// statement (typed arrays back), and segment look-up.
//
// It must not import fusion, spool or bridge, nor know about requests, NATS or
// HTTP: it takes segment.Write values and answers segment.Result values.
//
// Failure model: PushBundle either returns one Result per Write, in input
// order, meaning the transaction committed (queued segments are durable,
// duplicate segments wrote nothing), or an error, meaning nothing of the
// bundle is known to be written. A result that cannot be decoded or does not
// match the input is an error (ErrBadResult), never a partial answer.
//
// Lock order: partition rows are locked by ascending log_partitions.id inside
// log_push_multi_v2 (its pre-lock); every other statement that locks
// partition rows must do the same.
//
// Concurrency: DB is safe for concurrent use; pgxpool owns the connections.
package pgwire
