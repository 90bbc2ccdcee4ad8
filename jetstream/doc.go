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
// What it does not own: everything after the item is made. It hands each
// message to a Pusher (bridge.Bridge.PushItem), which runs the push path
// (layer-1 dedup, encryption, ownership, fusion, the spool, discovery) and
// calls back with the verdict. It must not import bridge, push, queues,
// durability, ownership, readside (the rooms behind it), fusion, pgwire,
// net/http or Prometheus.
//
// Goroutines: nats.go runs one delivery goroutine per filter's
// subscription; handle runs there, never waits for a verdict, and returns.
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
