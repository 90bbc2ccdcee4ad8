// Package auth decides who may do what: HTTP bearer tokens and their roles
// (a tenant token pushes, reads and configures its own tenant's queues; an
// admin token may also switch maintenance mode), compared in constant time,
// and the redaction of secrets (passwords in URLs and DSNs) before anything
// is logged or returned as an error.
//
// It holds no goroutine and no mutable state after construction: a Tokens
// is safe for concurrent use. It must not import any other package of the
// project, nor net/http.
package auth
