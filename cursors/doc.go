// Package cursors holds consumer state: what this bridge keeps about the
// consumers it serves, so that the rooms that serve them (consume for
// Queen's pops and acks) ask one place and never walk back up. Each kind of
// state is a type of its own, with its own lock or goroutines; a paragraph
// below says what each keeps, who feeds it, and what it costs when lost.
//
// The hot tail (Tail, tail.go): the segments this bridge committed last,
// per partition, in one contiguous run of offsets each, fed by fusion's
// commit hook and a transaction's commit (Committed) for the queues popped
// here lately (Want), with the groups' cursors as a pop's claim or an ack
// last saw them (SetCursor). A pop of a consumer keeping up is served from
// it (Take, then one pgwire.PopTail claim in consume), with no segment
// read. It is memory only: a restarted bridge starts empty, a commit it
// missed or a cursor it does not know sends the pop to PostgreSQL, and a
// wrong cursor is refused by the claim's compare-and-set.
//
// The marks (Marks, marks.go): which partitions of a queue may have
// messages past a group's cursor, steering the any-partition pops
// (Candidates), the reservation of a partition while a pop claims it
// (Reserve), what the claim found (Outcome), and the hint that a lease
// taken here holds a partition, until it is released (Released) or a
// second passes. The read side hands them every announcement it makes or
// takes from a peer (Heard, as its readside.Listener); the first pop of a
// queue and group reads the database once (MarksStore, which *pgwire.DB
// satisfies). They are hints: a stale mark costs a claim that finds
// nothing, never a message.
//
// The tail and the marks have no goroutine of their own: every call runs
// on its caller's (pops, acks, fusion's commit hook, announcers), and a
// mutex guards each one's maps, held for map and slice work only, never
// across a database call or a decode. A deleted queue is dropped from both
// by the front door's queue-drop hook (Tail.Drop, Marks.Drop). The claims,
// acknowledgements and leases of Queen's consumers are PostgreSQL's, made
// by consume through pgwire.
//
// The JetStream consumer engine (JSEngine, the engine the JetStream API
// calls) keeps the live state of the pull consumers this bridge owns
// (ownership picks one bridge per consumer, Config.Owner; pulls and acks
// reaching another bridge go to the owner through Config.Forwarder):
// parked pull requests with their expiry, heartbeats and max_bytes, the
// delivered-and-pending offsets above each partition's ack floor (a
// window of per-offset slots from the floor up, window.go), ack
// deadlines (ack_wait, backoff by delivery count, NAK delays, +WPI),
// redeliveries (before newer offsets of their partition), max_deliver and
// +TERM into the queue's dead letters, max_ack_pending and max_waiting.
// Sequences are partition offsets; the consumer sequence is dense per
// consumer. New commits of this bridge (Committed, fusion's commit hook)
// go to parked requests from memory; what this bridge committed to a
// consumed queue is also kept in the hot tail (Config.Tail) and read from
// there; older messages, and those other bridges wrote (Heard, and a poll
// while requests wait), are read from PostgreSQL through Store.ReadAfter,
// one statement per fill across partitions. Statuses (100, 404, 408, 409)
// are sent as nats-server sends them. A request whose inbox lost interest
// is dropped.
//
// Acknowledgements are made durable by fused writes: a flusher gathers
// the ack state of every consumer and partition (for FlushWindow, about a
// millisecond, once a double ack waits; else for LazyWindow, 100 ms) and
// stores it with one Store.CommitAcks (one statement, one commit, in the
// lock order of partition id then group); double acks are answered after
// that commit. A consumer loaded on a bridge (first use, a restart, an
// owner change) takes its floors, acknowledged offsets, delivered marks
// and redelivery counts from Store.ConsumerPartitions: what was in flight
// on a bridge that stopped or died is delivered again, once ack_wait has
// passed from the load, so that an acknowledgement still on its way is not
// overtaken by a redelivery (the partition waits; what is newer in it
// follows the redeliveries).
//
// The engine's goroutines: one per live consumer (run: fills, reads,
// timers), the flusher, and the interest watch; each consumer's mutex
// guards its state (see JSEngine for the lock order). Start and Stop: Stop
// answers every parked request 408 with its pending headers, stores the
// last acknowledgements and waits for every goroutine.
//
// It must not import bridge, consume, readside, push, fusion or jetstream,
// nor NATS, net/http or Prometheus: its callers hand it what it needs
// (commits, announcements, drops), and it reaches PostgreSQL through the
// narrow interfaces it declares (Store; NATS through Deliverer).
package cursors
