// Package readside owns reads and the news that wakes them: fetching
// messages from an offset (ServeFetch, Fetch), parking a read or a pop
// until a push to its partition or queue is announced (Park), the hot-list
// that coalesces local wake-ups to at most one per partition per 5 ms tick,
// MESSAGE_AVAILABLE announcements to and from peers on
// <prefix>.v1.available, and the marks that steer the consume room's
// any-partition pops: which partitions of a queue may have messages past a
// group's cursor (Candidates), what a claim found (Outcome), and a lease's
// release (Released); and the hot tail (Tail, tail.go): the segments this
// bridge committed last, fed by fusion's commit hook (Committed) for the
// queues popped here lately (Want), from which the consume room serves pops
// of a consumer keeping up. A deleted queue (Dropped, Tail.Drop) answers its
// parked reads and pops at once, empty, and leaves the marks and the hot
// tail.
//
// It must not import bridge, push, consume, queues or durability, nor
// net/http or Prometheus; it renders through jsonapi, and decrypts through
// the Payloads interface the caller passes (queues.Settings). The claims,
// acks and leases themselves are the consume room's.
//
// Goroutines: each read or pop runs on its caller's goroutine and parks on
// a channel of its own; the hot-list loop and the publisher loop are owned
// by Reads (Start starts them, Stop ends them and waits). A mutex guards
// the parked set and each pending key set, one the marks and one the tail
// (each held for map and slice work only, never across a database call).
package readside
