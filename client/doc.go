// Package client is a Go client for producers: it pushes items to
// queenbridge over NATS request/reply or over HTTP, with the same API.
//
// Push sends items and returns one typed Result per item. A transactionId
// is fixed for every item before the first attempt (a UUIDv7 when the
// caller sets none) and reused on every retry, so a retry can only ever be
// answered duplicate for what an earlier attempt stored: nothing is written
// twice. Push retries, with exponential backoff inside a time budget, what
// may succeed later: a timeout, no responders, 503, and items answered
// failed. It does not retry what will not (400, 401, 403, 413).
//
// Producer buffers items per queue and pushes them in batches when a batch
// reaches MaxItems or MaxBytes, or has waited Linger. Batches of one queue
// are pushed one after the other, so the order of items within a partition
// is the order they were added; different queues are pushed concurrently.
// Each item's result is delivered to OnResult. Flush pushes what is
// buffered and waits for it; Close flushes and stops.
//
// With Config.PartitionAware (over NATS) the client reads the bridges'
// owners' table and keeps it current from their announcements, and sends
// each part of a push to the bridge that owns its partitions, on that
// bridge's own subject, so that no bridge forwards it. A part whose owner
// does not answer goes to the shared subject at once; Stats counts those
// fallbacks. The table is advice: a stale one costs a forward, never a
// wrong write (docs/ownership.md).
//
// Pop, Ack and Commit are the parts of Consume for callers that drive
// them: Commit sends a transaction (Txn), pushes and acknowledgements of
// popped messages that the bridge commits together or not at all, resent
// on what may pass later (503, no answer) with the same transactionIds, so
// that a resent transaction that had committed fails instead of writing
// twice (docs/transactions.md).
//
// Connection options (credentials, TLS, the tenant's NATS account) are the
// nats.go options of the connection the caller hands in, or Config's HTTP
// token. The client imports nothing of the service: it imports nothing of
// the project but internal/buckets (the bucket rule bridges compute alike).
//
// Goroutines: a Client is safe for concurrent use and starts none of its
// own, but for PartitionAware: its announcement subscription (nats.go's)
// and a table read at a time, which Close ends and waits for; a push split
// over several owners sends its parts from goroutines it waits for. A
// Producer owns one goroutine per queue it has seen, which Close stops.
package client
