// Package queues owns queue settings on the bridge: a short-lived cache of
// each queue's options (so a push looks a queue up at most once per request,
// and rarely at all), configuring a queue, the queue.changed broadcast that
// makes peers drop their cached copy at once (of a changed queue, and of a
// deleted one, which every bridge also hands to Config.OnDrop), and payload
// encryption (AES-256-GCM) for queues that ask for it: the key id each queue
// is sealed under is recorded with the queue by the first push under a newer
// key (keys.go), so that a bridge without that key refuses the queue's pops
// before claiming anything (Sealed).
//
// It must not import bridge, readside, durability or pgwire, nor net/http
// or Prometheus; it reaches PostgreSQL through its Store (store.go: the
// pgwire calls it makes, which *pgwire.DB satisfies; the queue rows are
// storage's types) and peers through internal/peers.
//
// Goroutines: request goroutines share the cache, so a mutex guards its map
// (held for a map access). The NATS subscription's goroutine writes peers'
// settings into the same cache.
package queues
