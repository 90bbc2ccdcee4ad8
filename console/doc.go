// Package console is the web console's own room: the figures of this
// bridge that no other route answers, sampled over time. It owns a sampler
// goroutine that reads this bridge's counters every Config.Interval (2 s)
// through Config.Figures, a func the front door wires from the rooms'
// Stats (fusion, consume, durability, ownership, publish), and keeps the last
// Config.Keep (300: ten minutes) intervals as rates; and the route that
// answers them, GET /api/v1/bridge/overview, as an internal/route table the
// front door registers behind its guard (read role). docs/console.md has
// the answer's fields.
//
// It must not import bridge, fusion, consume, durability or ownership (the
// rooms whose figures it shows), pgwire, NATS, net/http or Prometheus:
// the overview is answered from memory, never from PostgreSQL, so the
// console shows a bridge whose database is down. It writes no JSON by hand
// (overview.go: the answer, beside its route, rendered by encoding/json).
//
// Goroutines: the sampler, started by Start and waited for by Stop. It and
// the request goroutines share the ring under a mutex (console.go says
// why).
//
// Failure model: nothing it does can fail; a counter that moved backwards
// (it never should) counts as no change.
package console
