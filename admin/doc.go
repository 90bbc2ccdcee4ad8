// Package admin is Queen's admin routes behind the front door
// (docs/admin.md, docs/admin-groups.md, docs/admin-messages.md): queue resources (list, detail, delete, namespaces,
// tasks, overview), consumer groups (list, detail, lagging, delete, seek,
// subscription), messages (list, detail, tombstones) and the status and
// maintenance routes the dashboard reads; and the web console's queue page
// (a queue's partitions and its groups' cursors, console.go). HTTP only: the front door
// registers every Route this package lists and hands each the tenant of the
// request, the path values, the query and the body.
//
// What it asks of others: pgwire runs every read and write, through the
// Store this room declares (store.go; *pgwire.DB satisfies it) (counts come
// from high-water marks, cursors and dead letters, never from a scan of
// segments); consume makes the group deletes and seeks (and tells the
// consumer state in cursors, and the read side); queues
// forgets deleted queues (Settings.Dropped: here, on every peer through
// queue.changed, and through its OnDrop hook in the read side, the marks,
// the hot tail and fusion) and decrypts payloads; durability holds the maintenance
// switches (maintenance mode, pop maintenance) and the spool's figures.
//
// Its wire types live beside its routes, in the *wire.go files: the query
// parameters and bodies the routes take and the answers they give, each
// error naming what was wrong (queueswire.go, statuswire.go,
// groupswire.go, messageswire.go, consolewire.go). The answers are
// rendered by encoding/json, except the message list and detail, written
// by hand on jsonapi's string and UUID appenders; jsonapi keeps what every
// route shares (error bodies, name rules, statuses).
//
// Size: with its wire types the room holds about 2,200 lines outside
// tests, above the house's 2,000. Half are those wire types, which serve
// these routes alone and belong beside them; the routes themselves are
// about 1,100 lines. Split the room by concern (queues, groups, messages)
// before it grows further.
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
