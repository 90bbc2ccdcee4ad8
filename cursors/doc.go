// Package cursors owns consumer state: what this bridge keeps in memory
// about its consumers, so that the rooms that serve them (consume for
// Queen's pops and acks) ask one place and never walk back up. Each kind of
// state is a type of its own with its own lock; the paragraphs below say
// what each keeps and who feeds it.
//
// The hot tail (Tail, tail.go): the segments this bridge committed last,
// per partition, in one contiguous run of offsets each, fed by fusion's
// commit hook and a transaction's commit (Committed) for the queues popped
// here lately (Want), with the groups' cursors as a pop's claim or an ack
// last saw them (SetCursor). A pop of a consumer keeping up is served from
// it (Take, then one pgwire.PopTail claim in consume), with no segment read.
//
// The marks (Marks, marks.go): which partitions of a queue may have
// messages past a group's cursor, steering the any-partition pops
// (Candidates), the reservation of a partition while a pop claims it
// (Reserve), what the claim found (Outcome), and the hint that a lease
// taken here holds a partition until it is released (Released). The read
// side hands them every announcement it makes or takes from a peer (Heard,
// as its readside.Listener); the first pop of a queue and group reads the
// database once (MarksStore, which *pgwire.DB satisfies).
//
// What a deleted queue leaves is dropped by the front door's queue-drop
// hook (Tail.Drop, Marks.Drop). The claims, acknowledgements and leases
// themselves are PostgreSQL's, made by consume through pgwire; this room
// holds hints and copies that a claim checks (a compare-and-set of the
// cursor), never the truth.
//
// It must not import bridge, consume, readside, push, fusion or jetstream,
// nor NATS, net/http or Prometheus: the callers hand it what it needs
// (commits, announcements, drops), and it calls PostgreSQL through the
// narrow interfaces it declares.
//
// Goroutines: none of its own. Every call runs on its caller's goroutine
// (pops, acks, fusion's commit hook, announcers); a mutex guards each
// type's maps, held for map and slice work only, never across a database
// call or a decode.
//
// Failure model: everything here is memory and may be lost or wrong
// without loss of data. A bridge that restarts starts empty; a tail that
// misses a commit, or a cursor it does not know, sends the pop to
// PostgreSQL; a wrong cursor is refused by the claim's compare-and-set; a
// mark that is stale costs a claim that finds nothing, and a lease hint
// ends by itself within a second.
package cursors
