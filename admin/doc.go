// Package admin is Queen's admin routes behind the front door (SPEC §12.2
// to §12.5, §12.7): queue resources (list, detail, delete, namespaces,
// tasks, overview), consumer groups (list, detail, lagging, delete, seek,
// subscription), messages (list, detail, tombstones) and the status and
// maintenance routes the dashboard reads. HTTP only: the front door
// registers every Route this package lists and hands each the tenant of the
// request, the path values, the query and the body.
//
// What it asks of others: pgwire runs every read and write (counts come
// from high-water marks, cursors and dead letters, never from a scan of
// segments); consume owns the consumer state that group deletes and seeks
// change; readside answers parked pops and tells peers of changes; queues
// forgets deleted queues and decrypts payloads; durability holds the
// maintenance switches and the spool's figures. Answers are rendered by
// jsonapi.
//
// It must not import bridge, push or ownership, nor net/http, NATS or
// Prometheus; it writes no SQL and no JSON by hand.
//
// Goroutines: none of its own. Each call runs on its caller's goroutine.
//
// Failure model: every write is one PostgreSQL transaction that locks in
// the one global order (queue row, partition rows ascending, consumer rows
// ascending); a failure leaves nothing half done and answers an error.
package admin
