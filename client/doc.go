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
// Connection options (credentials, TLS, the tenant's NATS account) are the
// nats.go options of the connection the caller hands in, or Config's HTTP
// token. The client imports nothing of the service.
//
// Goroutines: a Client is safe for concurrent use and starts none. A
// Producer owns one goroutine per queue it has seen, which Close stops.
package client
