// Package admin is Queen's admin routes behind the front door
// (docs/admin.md, docs/admin-groups.md): queue resources (list, detail,
// delete, namespaces, tasks, overview), consumer groups (list, detail,
// lagging, delete, seek, subscription) and the status and maintenance
// routes the dashboard reads; and the web console's queue page
// (a queue's partitions and its groups' cursors, console.go). HTTP only: the front door
// registers every Route this package lists and hands each the tenant of the
// request, the path values, the query and the body. Queen's message
// routes (list, detail, tombstones) are the read side's (readside.Messages).
//
// What it asks of others: pgwire runs every read and write, through the
// Store this room declares (store.go; *pgwire.DB satisfies it) (counts come
// from high-water marks, cursors and dead letters, never from a scan of
// segments); consume makes the group deletes and seeks (and tells the
// consumer state in cursors, and the read side); queues
// forgets deleted queues (Settings.Dropped: here, on every peer through
// queue.changed, and through its OnDrop hook in the read side, the marks,
// the hot tail and fusion); durability holds the maintenance
// switches (maintenance mode, pop maintenance) and the spool's figures.
//
// Its wire types live beside its routes, in the *wire.go files: the query
// parameters and bodies the routes take and the answers they give, each
// error naming what was wrong (queueswire.go, statuswire.go,
// groupswire.go, consolewire.go). The answers are rendered by
// encoding/json; jsonapi keeps what every route shares (error bodies, name
// rules, statuses).
//
// Size: about 1,600 lines outside tests, wire types included, since the
// message routes moved to the read side; split by concern (queues,
// groups) before it passes 2,000.
//
// It must not import bridge, push or ownership, nor net/http, NATS or
// Prometheus; it writes no SQL.
//
// Goroutines: none of its own. Each call runs on its caller's goroutine.
//
// Failure model: every write is one PostgreSQL transaction that locks in
// the one global order (queue row, partition rows ascending, consumer rows
// ascending); a failure leaves nothing half done and answers an error. A
// queue delete's segments are the exception by design: unreachable from
// its commit on, they are removed afterwards in bounded steps
// (pgwire.PurgeStep), by the delete for a while and then by retention.
package admin
