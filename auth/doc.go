// Package auth decides who may do what: HTTP bearer tokens and their roles
// (a tenant token pushes, reads and configures its own tenant's queues; an
// admin token may also switch maintenance mode), compared in constant time;
// the tenant of a NATS request in the accounts mode (Accounts: the
// requester's account, which nats-server names) and the tenant a push
// subject names; and the redaction of secrets (passwords in URLs and DSNs)
// before anything is logged or returned as an error.
//
// It holds no goroutine and no mutable state after construction: a Tokens
// is safe for concurrent use. It imports nothing of the project but
// internal/tenancy (the tenant type). It must not import bridge, NATS,
// net/http or Prometheus.
package auth
