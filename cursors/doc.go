// Package cursors holds consumer state.
//
// The JetStream consumer engine (JSEngine, the Engine the JetStream API
// calls) keeps the live state of the pull consumers this bridge owns
// (ownership picks one bridge per consumer, Config.Owner; pulls and acks
// reaching another bridge go to the owner through Config.Forwarder):
// parked pull requests with their expiry, heartbeats and max_bytes, the
// delivered-and-pending offsets above each partition's ack floor, ack
// deadlines (ack_wait, backoff by delivery count, NAK delays, +WPI),
// redeliveries (before newer offsets of their partition), max_deliver and
// +TERM into the queue's dead letters, max_ack_pending and max_waiting.
// Sequences are partition offsets; the consumer sequence is dense per
// consumer. New commits of this bridge (Committed, fusion's commit hook)
// go to parked requests from memory; older messages, and those other
// bridges wrote (Available, and a poll while requests wait), are read
// from PostgreSQL through Store.ReadAfter, one statement per fill across
// partitions. Statuses (100, 404, 408, 409) are sent as nats-server
// sends them. A request whose inbox lost interest is dropped.
//
// Acknowledgements are made durable by fused writes: a flusher gathers
// the ack state of every consumer and partition for about a millisecond
// and stores it with one Store.CommitAcks (one statement, one commit, in
// the lock order of partition id then group); double acks are answered
// after that commit. A consumer loaded on a bridge (first use, a restart,
// an owner change) takes its floors, acknowledged offsets and delivery
// counts from Store.ConsumerPartitions: what was in flight on a bridge
// that died is delivered again.
//
// It must not import jetstream, bridge, NATS, net/http or Prometheus: it
// reaches PostgreSQL through Store and NATS through Deliverer, both
// interfaces it declares. Goroutines: one per live consumer (run: fills, reads, timers),
// the flusher, and the interest watch; each consumer's mutex guards its
// state (see JSEngine for the lock order). Start and Stop: Stop answers
// every parked request 408 with its pending headers, stores the last
// acknowledgements and waits for every goroutine.
package cursors
