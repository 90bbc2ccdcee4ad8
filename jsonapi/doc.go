// Package jsonapi is the JSON of the public API, both ways: push bodies in
// (decoded in place on internal/jsonscan, every item validated before any is
// returned, payloads left as sub-slices of the body), read requests in, and
// push results, read answers and error bodies out, written by hand without
// reflection. The name rules (queue, partition, transactionId, traceId)
// live here.
//
// It holds no state and starts no goroutine; it must not import the rooms,
// fusion, pgwire, NATS, net/http or Prometheus.
package jsonapi
