// Package readside owns reads and the news that wakes them: fetching
// messages from an offset (ServeFetch, Fetch), parking a read or a pop
// until a push to its partition or queue is announced (Park: the caller
// looks, and asks Parking.Again whether to look again; the read side never
// calls back into it), the hot-list that coalesces local wake-ups to at
// most one per partition per 5 ms tick, and MESSAGE_AVAILABLE
// announcements to and from peers on <prefix>.v1.available. Every
// announcement, made here or taken from a peer, is handed to the Listener
// (the consumer state's marks, cursors.Marks, which steer any-partition
// pops). A deleted queue (Dropped) answers its parked reads and pops at
// once, empty.
//
// Queen's message routes are the read side's too (Messages,
// docs/admin-messages.md): the list form of GET /api/v1/messages, which
// shares its path with the offset read (IsMessageList tells them apart),
// a message's detail and its tombstone (which every read then skips, and
// which the Tombstones interface hears, cursors.JSEngine dropping what it
// holds of the message in memory; peers hear it on
// <prefix>.v1.message.deleted and tell their own Tombstones,
// tombstones.go). A
// message's status is read from its groups' cursor rows, the live
// queue-mode lease and the dead letters (messagestatus.go), never from a
// scan of segments beyond what a page needs; the routes' wire types live
// beside them (messageswire.go), the answers written by hand on jsonapi's
// appenders. Messages is a Route table the front door registers (HTTP
// only); it reads through its MessageStore and holds no state.
//
// It must not import bridge, push, consume, cursors, queues, durability or
// pgwire, nor net/http or Prometheus; it reads through its Store (store.go,
// which *pgwire.DB satisfies, its messages storage's type), renders
// through jsonapi, and decrypts through the
// Payloads interface the caller passes (queues.Settings).
// Consumer state (the hot tail, the marks, claims, acks and leases) is the
// cursors and consume rooms'.
//
// Goroutines: each read, pop or message route runs on its caller's
// goroutine; a read or pop parks on
// a channel of its own; the hot-list loop and the publisher loop are owned
// by Reads (Start starts them, Stop ends them and waits). A mutex guards
// the parked set and each pending key set (each held for map work only,
// never across a database call). The Listener is called on the
// announcer's goroutine, or the peer subscription's.
//
// Failure model: a read answers what PostgreSQL returned or its error (a
// message route 503 with it; a tombstone is one statement, done or not); an
// announcement is a hint (a lost one costs a parked read its wait, never a
// message), and a parked read or pop answers empty at its wait's end, at
// Stop or Unpark, or when its queue is deleted.
package readside
