// Package jetstream is the intake for producers written for NATS JetStream
// (nats.go's jetstream.Publish and PublishAsync, the legacy js.Publish,
// `nats pub --jetstream`, connectors with a JetStream output). A JetStream
// publish is a NATS request on the stream's own subject, answered with a
// PubAck on the reply subject; no $JS.API request is involved. So the
// bridge can take those producers unchanged (docs/jetstream.md).
//
// What it owns: the stream definitions (QUEEN_JETSTREAM: parsed and checked
// together at start, ParseStreams and Check), one subscription per filter
// in queue group queen-bridge, the mapping of a message to one push item
// (queue = the stream's name; partition = the tokens the filter's wildcards
// matched, or the Queen-Partition header; transactionId = Nats-Msg-Id;
// payload = the body when it is JSON, else its base64 marked as such; the
// subject and the header block kept with it, for JetStream consumers; the
// tenant = the requester's account in the accounts mode), the refusals it
// answers itself (Nats-Expected-Stream, a body over the limit, headers that
// ask for what these streams cannot do) and the PubAck answers, rendered
// from fixed templates per stream. Counters: messages by outcome, and those
// that came without a reply subject (Stats).
//
// It also answers the JetStream API for pull consumers on those streams
// (API, in queue group queen-bridge): $JS.API.STREAM.INFO/LIST/NAMES,
// CONSUMER.CREATE (the filter tokens form too), the legacy
// CONSUMER.DURABLE.CREATE, CONSUMER.INFO/DELETE/NAMES/LIST,
// CONSUMER.MSG.NEXT (the pull request parsed, then handed to the engine
// with its reply as the inbox) and $JS.API.INFO, and takes the
// acknowledgements on $JS.ACK.> (the ack subject parsed, the body read as
// +ACK, -NAK with a delay, +WPI, +TERM with a reason). Its JSON is
// nats-server's, field for field, in types beside the handlers (not
// jsonapi's: nobody else uses them and they are not hot); every answer
// passes the nats CLI's schema check. What is not served (push consumers,
// flow control, rate limits, sampling, replay at the original pace,
// priority groups, pausing, stream management, direct gets, single
// messages by sequence) is refused with nats-server's error code and text
// where one fits and bad request (10003) naming it otherwise, never
// silently. Refusals of a pull request are status messages: 400 with
// nats-server's words, 503 (no responders, as from nats-server) for a
// consumer or stream that does not exist. The ack subject's codec
// (AppendAckSubject, ParseAckSubject, ParseAckBody) and the status
// messages (Append...: 100 Idle Heartbeat, 404, 408 with the pending
// counts, the 409s, 400, 503) are plain functions for the engine's
// deliverer too.
//
// The consumers themselves (definitions, parked pulls, what is delivered
// and pending, ack deadlines, the acknowledgements' writes) are the
// engine's, behind the Engine interface declared here with the plain
// types it speaks (ConsumerConfig, ConsumerInfo, StreamState,
// PullRequest, AckRef, AckKind and typed errors); the API converts the
// JSON to and from them and maps the errors to JetStream's codes. In the
// accounts mode each request is its account's tenant's, so a tenant sees
// and reaches its own consumers only.
//
// What it does not own: everything after the item is made. It hands each
// message to a Pusher (bridge.Bridge.PushItem), which runs the push path
// (layer-1 dedup, encryption, ownership, fusion, the spool, discovery) and
// calls back with the verdict. It must not import bridge, push, queues,
// durability, ownership, readside (the rooms behind it), fusion, pgwire,
// net/http or Prometheus.
//
// Goroutines: nats.go runs one delivery goroutine per filter's
// subscription; handle runs there, never waits for a verdict, and returns.
// The API's two subscriptions hand pulls and acks to the engine on their
// delivery goroutines (the engine only queues them) and serve every other
// request on a worker of its own (internal/gate: APIConfig.Workers of
// them), each engine call bounded by APIConfig.Timeout; API.Stop drains
// the subscriptions, admits no more and waits for what it admitted.
// The answer is published by whichever goroutine settles the verdict (a
// fusion shard's, a worker's, or the delivery goroutine itself for a
// refusal). Stop drains the subscriptions and waits for the drains; the
// bridge stops the intake before it stops taking pushes, so that what was
// delivered here is still written.
//
// Failure model: a message is answered at most once, and only with what
// the push path reports: a PubAck with its offset means committed in
// PostgreSQL, a PubAck with "buffered":true means fsynced in the spool
// (seq 0). Anything else is an API error, and nothing was written for it.
// A message without a reply subject is handled alike; if it is refused or
// fails, a rate-limited warning says so, since nobody else hears it.
package jetstream
