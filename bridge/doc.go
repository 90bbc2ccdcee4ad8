// Package bridge is queenbridge's front door: the NATS micro service
// (<prefix>.v1.push and the other subjects of docs/api.md) and the HTTP
// routes (/api/v1/..., /health, /metrics and /metrics/prometheus). It keeps
// the transports, auth (which tenant a request acts for, and whether it may),
// admission (the in-flight byte budget, the worker pool, parked-request
// slots, refusing what arrives while stopping) and the wiring of the rooms.
//
// Everything else is a room's: the push call is push's, the consumer API
// consume's, consumer state (the hot tail, the marks) cursors', fetches
// and wake-ups readside's, queue settings queues', maintenance and
// the spool durability's, several bridges ownership's; the wire JSON is
// jsonapi's. The front door decodes with jsonapi, hands the request to a
// room and carries the room's answer back; a request that does not decode
// it answers itself (400 and what was wrong, refusals.go), so rooms are
// handed decoded requests only. It holds none of the rooms' state and
// writes neither SQL nor JSON. A NATS answer is one NATS message: one that
// would pass max_payload is refused with a 413 that says so (natsfit.go),
// never published into nothing.
//
// Goroutines: a NATS request is handed from the delivery goroutine to a
// bounded worker pool (or, for a small push whose queue settings are
// cached, run where it arrived); nobody waits for a push's verdicts: the
// goroutine that settles its last group answers. A request that may park
// (a fetch or pop with a wait) runs on a goroutine of its own holding one
// of MaxParked slots. An HTTP request runs on its connection's goroutine:
// internal/httpserve's lean loop for a push, net/http's for the rest. Stop closes intake, waits for every accepted request's
// answer, then stops the rooms (docs/architecture.md, "Start and stop").
//
// It must not import embedded (cmd/queen-bridge starts the servers and
// hands them in) or client. Of the rooms it alone speaks HTTP and registers
// Prometheus collectors; net/http is also internal/httpserve's (the
// listener), metrics' (the page), console/web's and client's. bridge reads
// request headers, never the environment.
package bridge
