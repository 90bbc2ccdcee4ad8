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
// It must not import bridge, consume, readside, push, fusion or jetstream,
// nor NATS, net/http or Prometheus: its callers hand it what it needs
// (commits, announcements, drops), and it reaches PostgreSQL through the
// narrow interfaces it declares.
package cursors
