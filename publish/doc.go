// Package publish is the relay of queen.publish: messages written inside the
// callers' own PostgreSQL transactions, stored in the log when, and only
// when, those transactions commit (docs/publish.md).
//
// What it owns: one logical replication slot per watched database (the
// log's own by default, QUEEN_PUBLISH_DSN names others), read through
// pgwire.Slot (pgoutput, messages on); the decoding of each message's
// content into one push item (content.go: a compact, versioned layout that
// queen.publish writes), for the default tenant; the transactionId of a
// message whose caller named none, derived from its place in the WAL (the
// source's system identifier, the commit position, the index in the
// transaction), so that a replay is recognised; the order of pushes; the
// relayed position per slot (stored in the log's database through
// Positions, then confirmed to the slot); the reading of the marks the push
// path stores with the segments; the figures (Stats, Behind).
//
// What it does not own: everything after the item is made. It hands each
// batch to a Pusher (bridge.Bridge.PushItems), which runs the push path
// (ids, layer-1 dedup, sealing, grouping, ownership, fusion, the spool).
// It must not import bridge, push, queues, durability, ownership,
// readside, fusion, NATS, net/http or Prometheus; its SQL and the replication
// protocol are pgwire's.
//
// Goroutines: one per source (run), started by Start and stopped by Stop,
// which owns the sessions. In a session that goroutine reads the slot
// (pgwire.Slot.Next: the connection is its own) and hands transactions
// over a bounded channel to a pusher goroutine the session owns and waits
// for; the pusher pushes one batch at a time, in commit order and, within
// a transaction, in call order, so each partition's offsets follow that
// order. Stats reads atomics and the pending list (under its mutex: the
// reader appends, the pusher removes, Stats reads).
//
// Failure model: every item carries its mark (its place in the WAL: slot,
// commit position, index; marks.go), and the transaction that stores its
// segment stores the mark of its partition (queen.publish_marks), so a
// message is stored exactly when its place is at or below its partition's
// mark. A session starts by reading the marks and skips what they cover:
// a bridge killed between a push's commit and anything after it, or a
// PostgreSQL crash that rewinds the slot, replays nothing twice, however
// long it stayed down and whatever the queue's deduplication window. A
// failed push is tried again with the items it did not store. The
// relayed position (the end of the last transaction whose messages are all
// stored: queued, duplicate, or buffered, that is fsynced in the spool,
// whose drain probes over the time since) is stored once a second and then
// confirmed to the slot: a shortcut past the transactions it covers.
// A rolled-back transaction (or savepoint) never reaches the stream. One
// bridge at a time reads a slot (PostgreSQL lets one connection stream
// it); the others retry every Retry and take over when its connection
// ends. A database without wal_level=logical, a free slot or the
// REPLICATION attribute is named in one warning line at start; the rest of
// the bridge runs.
package publish
