// Package jsonapi is the public API's shared JSON, both ways: push bodies
// in (decoded in place on internal/jsonscan, every item validated before
// any is returned, payloads left as sub-slices of the body),
// acknowledgements (the bodies clients send read on internal/jsonscan too,
// anything it is not sure of by encoding/json, to which a differential
// fuzz target holds it), the requests of reads, pops, lease extensions,
// dead letters, transactions, configure and maintenance (bodies and query
// parameters, each error naming what was wrong), and out push results,
// read and pop answers, ack results, the lease, dead-letter, transaction,
// configure, maintenance and health answers, the tenant of an owners'
// table (ownership renders the table) and error bodies, written by hand without reflection where they are on a hot
// path. The name rules (queue, partition, transactionId, traceId) and the
// answer statuses live here too. The wire types of the admin routes and of
// the console live beside their routes, in admin, readside (Queen's
// message routes) and console.
//
// Names say which way a function goes and what it takes:
//
//   - Decode<What>(body) reads a request body (DecodePush, DecodeAck,
//     DecodeTransaction, DecodeError); Parse<What>Query(get) reads query
//     parameters, and Parse<What>(s) a value's text form (ParseUUID).
//   - Append<What>(dst, …) writes an answer, or a part of one: it appends
//     to dst and returns the extended slice, so callers render into a
//     buffer they hold (nil: a new one). Every encoder is one, hand-written
//     or on encoding/json (AppendResource); none returns a body of its own.
//   - An answer written element by element is opened and closed by
//     Open<What> and Close<What>, which append too: OpenMessages,
//     AppendMessage, CloseMessages; OpenPop, AppendPopped, ClosePop.
//
// It holds no state and starts no goroutine. It imports nothing of the
// project but internal/jsonscan and internal/tenancy; it must not import
// bridge (nor any room), fusion, pgwire, NATS, net/http or Prometheus. The
// rooms render through it; the front door decodes with it.
package jsonapi
