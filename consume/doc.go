// Package consume is Queen's consumer API behind the front door: pops
// (claiming partitions for a consumer group under a lease, reading after
// the group's cursor), acknowledgements (grouped per partition, group and
// lease, applied in the one lock order), lease extension, the dead
// letters (listed, and requeued as new pushes of their messages written
// with their removal in one PostgreSQL transaction, requeue.go; the two
// HTTP routes as a route table, routes.go), Queen's transactions (pushes and acknowledgements in one
// PostgreSQL transaction, txn.go), the Streams SDK's queries, state reads
// and cycles (a cycle is a transaction with the query's state changes
// beside it, streams.go; the idle flush's and the processing loop's reads
// of one partition take turns with their cycles, streamturns.go), and the admin routes' seeks and deletes
// of a group's cursors (groups.go), which the marks and the hot tail
// (cursors) must hear of. It answers with its own result types (Popped,
// AckOutcome, DeadLetters), and renders them for the wire through jsonapi
// (answers.go).
//
// What it asks of others: pgwire runs each claim, ack, extension and
// dead-letter read (through the Store interface, which *pgwire.DB
// satisfies); cursors keeps the consumer state that steers pops: the hot
// tail, from which a pop of a consumer keeping up is claimed without a
// segment read, and the marks (the Marks interface, which *cursors.Marks
// satisfies), which say which partitions an any-partition pop may claim
// and hear of each claim's outcome and each released lease; readside
// parks a pop that found nothing until a push is announced (the pop runs
// its own loop and asks readside.Parking whether to look again: the read
// side never calls back into this room) and announces the partitions of
// released leases, here and to peers; queues decrypts payloads of
// encrypted queues; push prepares a transaction's pushes (Preparer, which
// *push.Pusher satisfies), exactly as a push's, and a requeue's pushes
// the same way.
//
// It must not import bridge, durability or ownership, nor net/http, NATS
// or Prometheus; of push it uses the preparation only, never the write
// pipeline (fusion, forwards, the spool). It writes no SQL and no JSON by
// hand.
//
// Goroutines: none of its own. Each call runs on its caller's goroutine
// (a parked pop waits there); the counters are atomics. The pops a cancel
// may reach (cancel.go) are a map under a lock: pops and cancels arrive on
// many goroutines at once.
//
// Failure model: a pop delivers under a lease that expires unless it is
// acknowledged or extended; an expired lease's messages are delivered
// again to the next claim. A pop that cannot deliver consumes nothing: a
// queue sealed under a key this bridge lacks is refused before any claim;
// a payload that does not open, an answer larger than its transport
// carries, or a requester that left or cancelled hands the claim back in
// the same request (release.go), as an acknowledgement retry, or with
// auto-ack by moving the cursor back; an auto-ack pop of a queue that may
// be sealed claims under a lease and acknowledges only once its answer is
// rendered. An ack applies in PostgreSQL or fails whole
// for its partition; nothing is acknowledged that PostgreSQL did not
// commit. A transaction, a cycle and a requeue commit whole or not at all: after
// COMMIT it is announced before it is answered; a lost connection during
// COMMIT is answered as an unknown outcome, never as success.
package consume
