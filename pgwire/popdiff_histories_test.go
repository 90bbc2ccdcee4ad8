package pgwire_test

import "github.com/queenbridge/queenbridge/pgwire"

// The hand-picked histories of the pop's differential test: each reaches
// one case on purpose (the seeded histories reach them by chance). The
// offsets in the comments are what every side must deliver.

// pdHistory is a named history.
type pdHistory struct {
	name string
	run  func(r *popDiff)
}

// popReq is a pop of queue's partitions for group, under a lease.
func popReq(queue, group string, batch int, parts ...string) pdPopReq {
	return pdPopReq{queue: queue, group: group, parts: parts, batch: batch}
}

// latest is the last pop that delivered.
func (r *popDiff) latest() pdPop {
	r.t.Helper()
	if len(r.pops) == 0 {
		r.fatalf("no pop delivered")
	}
	return r.pops[len(r.pops)-1]
}

// ackLatest acknowledges everything the last delivering pop gave on part.
func (r *popDiff) ackLatest(part, status string, foreign bool) {
	r.t.Helper()
	p := r.latest()
	r.ack(p, part, p.parts[part], status, foreign)
}

var popHistories = []pdHistory{
	{"tombstones", func(r *popDiff) {
		r.pushN(false, "pd.plain", "p0", 3) // m1-m3: 1..3
		r.pushN(false, "pd.plain", "p0", 2) // m4 m5: 4..5
		r.pushN(false, "pd.plain", "p0", 2) // m6 m7: 6..7
		r.pop(popReq("pd.plain", "all", 2, "p0"))
		r.ackLatest("p0", "completed", false)
		r.delete("pd.plain", "p0", "m3")
		r.delete("pd.plain", "p0", "m4")
		r.pop(popReq("pd.plain", "all", 2, "p0")) // (2, 4] is tombstones alone: stepped over
		r.pop(popReq("pd.plain", "all", 3, "p0")) // 5..7, from the tail
		r.ackLatest("p0", "completed", false)
		r.pushN(false, "pd.plain", "p0", 3) // m8-m10: 8..10
		r.delete("pd.plain", "p0", "m9")
		r.pop(popReq("pd.plain", "all", 5, "p0")) // 8 and 10, 9 left out
		r.ackLatest("p0", "completed", false)
		r.pushN(false, "pd.plain", "p0", 2)
		r.pop(popReq("pd.plain", "all", 5, "p0"))
		r.delete("pd.plain", "p0", "m11") // deleted while leased: the ack still names it
		r.ackLatest("p0", "completed", false)
	}},
	{"delayedProcessing", func(r *popDiff) {
		r.pushN(false, "pd.delay", "p0", 2)
		r.pop(popReq("pd.delay", "all", 5, "p0")) // too young: empty
		r.age()
		r.pop(popReq("pd.delay", "all", 5, "p0")) // 1..2; the tail leaves it to PostgreSQL
		r.ackLatest("p0", "completed", false)
		r.pushN(false, "pd.delay", "p0", 2)
		r.pop(popReq("pd.delay", "all", 5, "p0")) // too young again
		r.age()
		r.pushN(false, "pd.delay", "p0", 1)
		r.pop(popReq("pd.delay", "all", 5, "p0")) // 3..4, not the young 5
	}},
	{"windowBuffer", func(r *popDiff) {
		r.pushN(false, "pd.window", "p1", 2)
		r.pop(popReq("pd.window", "all", 5, "p1")) // window: no cursor row yet
		r.age()
		r.pop(popReq("pd.window", "all", 5, "p1")) // 1..2
		r.ackLatest("p1", "completed", false)
		r.pushN(false, "pd.window", "p1", 1)
		r.pop(popReq("pd.window", "all", 5, "p1")) // window again
		r.age()
		r.pop(popReq("pd.window", "all", 5, "p1")) // 3
	}},
	{"expired leases", func(r *popDiff) {
		r.pushN(false, "pd.lease", "p0", 3)
		r.pushN(false, "pd.lease", "p1", 2)
		r.pop(popReq("pd.lease", "all", 2, "p0", "p1"))
		r.pop(popReq("pd.lease", "all", 2, "p0")) // leased
		r.expire(r.latest())
		r.pop(popReq("pd.lease", "all", 5, "p0", "p1")) // both taken over; p1 from the tail (the refused claim of p0 forgot its cursor)
		both := r.latest()
		r.ackLatest("p0", "retry", false)
		r.pop(popReq("pd.lease", "all", 5, "p0"))
		r.ackLatest("p0", "completed", false)
		r.expire(r.latest())
		r.pop(popReq("pd.lease", "all", 5, "p1")) // leased: the lease of p1 still lives
		r.ack(both, "p1", both.parts["p1"], "completed", false)
		r.pushN(false, "pd.lease", "p0", 1)
		r.pushN(false, "pd.lease", "p1", 1)
		r.pop(popReq("pd.lease", "all", 5, "p0", "p1")) // both from the tail, in one claim statement
		r.expire(r.latest())
		r.pop(popReq("pd.lease", "all", 5, "p1", "p0")) // both expired leases taken over from the tail
	}},
	{"retention", func(r *popDiff) {
		r.pushN(false, "pd.ret", "p0", 2) // 1..2
		r.pushN(false, "pd.ret", "p0", 2) // 3..4
		r.pushN(false, "pd.ret", "p0", 2) // 5..6
		r.pop(popReq("pd.ret", "all", 1, "p0"))
		r.ackLatest("p0", "completed", false)
		r.age()
		r.retention(1)                          // 1..2 removed
		r.pop(popReq("pd.ret", "all", 3, "p0")) // 3..5: the tail's first segment is gone
		r.ackLatest("p0", "completed", false)
		// Retention removes everything after the cursor under a lease that
		// then expires.
		r.pushN(false, "pd.ret", "p1", 2)
		r.pop(popReq("pd.ret", "all", 5, "p1"))
		r.age()
		r.retention(5)
		r.expire(r.latest())
		r.pop(popReq("pd.ret", "all", 5, "p1"))
		r.pushN(false, "pd.ret", "p1", 1)
		r.ack(pdPop{queue: "pd.ret", group: "all", auto: true}, "p1", []string{"m9"}, "completed", false)
		r.pop(popReq("pd.ret", "all", 5, "p1"))
		// A queue that keeps what its groups have not consumed.
		r.pushN(false, "pd.keep", "p0", 2)
		r.pushN(false, "pd.keep", "p0", 2)
		r.pop(popReq("pd.keep", "all", 2, "p0"))
		r.ackLatest("p0", "completed", false)
		r.age()
		r.retention(5)
		r.pop(popReq("pd.keep", "all", 5, "p0"))
	}},
	{"groups and subscriptions", func(r *popDiff) {
		r.pushN(false, "pd.plain", "p1", 2) // 1..2, then of 00:00:01
		r.age()
		r.pushN(false, "pd.plain", "p1", 2) // 3..4, of 00:00:02
		r.age()
		r.pushN(false, "pd.plain", "p1", 2) // 5..6, of 00:00:03
		r.age()
		r.pushN(false, "pd.plain", "p1", 1)             // 7, fresh
		r.pushN(false, "pd.plain", "p2", 1)             // 1, fresh
		r.pop(popReq("pd.plain", "from", 5, "p1"))      // after 4: 5..7
		r.pop(popReq("pd.plain", "new", 5, "p1"))       // after 7: empty
		r.pop(popReq("pd.plain", "all", 2, "p1", "p2")) // 1..2 and 1
		r.pop(popReq("pd.plain", pgwire.QueueMode, 5, "p1"))
		r.pushN(false, "pd.plain", "p1", 1)             // 8
		r.pushN(false, "pd.plain", "p2", 1)             // 2
		r.pop(popReq("pd.plain", "new", 5, "p1", "p2")) // 8 from the tail; p2 after 1 (subscribed after it): 2
		r.pop(popReq("pd.plain", "from", 5, "p2"))      // p2 is all after 00:00:02.5: 1..2
		r.ackLatest("p2", "completed", false)
		r.pop(popReq("pd.plain", pgwire.QueueMode, 5, "p1")) // leased
	}},
	{"stale cursor", func(r *popDiff) {
		r.pushN(false, "pd.plain", "p2", 3)
		r.pop(popReq("pd.plain", "all", 1, "p2"))
		r.ackLatest("p2", "completed", true) // through another bridge: the tail still sees 0
		r.pushN(false, "pd.plain", "p2", 2)
		r.pop(popReq("pd.plain", "all", 5, "p2")) // the claim from 0 is refused: 2..5
		r.ackLatest("p2", "completed", false)
		r.pushN(false, "pd.plain", "p2", 1)
		r.pop(popReq("pd.plain", "all", 5, "p2")) // from the tail again
	}},
	{"another bridge's pushes", func(r *popDiff) {
		r.pushN(false, "pd.lease", "p0", 2)
		r.pop(popReq("pd.lease", "all", 5, "p0"))
		r.ackLatest("p0", "completed", false)
		r.pushN(false, "pd.lease", "p0", 2) // 3..4, in the tail
		r.pushN(true, "pd.lease", "p0", 3)  // 5..7, not
		r.pop(popReq("pd.lease", "all", 5, "p0"))
		r.ackLatest("p0", "completed", false)
		r.pop(popReq("pd.lease", "all", 5, "p0")) // 5..7: the tail's run ends at 4
		r.ackLatest("p0", "completed", false)
		r.pushN(false, "pd.lease", "p0", 1) // a new run: 8
		r.pop(popReq("pd.lease", "all", 5, "p0"))
	}},
	{"another tenant", func(r *popDiff) {
		r.pushN(false, "pd.plain", "p0", 2)
		r.pop(popReq("pd.plain", "all", 5, "p0"))
		r.ackLatest("p0", "completed", false)
		r.pushN(false, "pd.plain", "p0", 2)
		stranger := popReq("pd.plain", "all", 5, "p0")
		stranger.tenant = pdStranger
		r.pop(stranger)
		stranger.byName = true
		r.pop(stranger)
		r.pop(popReq("pd.plain", "all", 5, "p0"))
	}},
	{"auto-ack and retries", func(r *popDiff) {
		r.pushN(false, "pd.lease", "p2", 3) // m1-m3; retryLimit 1
		r.pop(popReq("pd.lease", "all", 3, "p2"))
		r.ack(r.latest(), "p2", []string{"m1"}, "failed", false) // retried once
		r.delete("pd.lease", "p2", "m1")
		r.delete("pd.lease", "p2", "m2")
		r.delete("pd.lease", "p2", "m3")
		auto := popReq("pd.lease", "all", 5, "p2")
		auto.auto = true
		r.pop(auto) // tombstones alone, stepped over by an auto-ack pop
		r.pushN(false, "pd.lease", "p2", 1)
		r.pop(popReq("pd.lease", "all", 5, "p2"))
		r.ackLatest("p2", "failed", false)
		r.pop(popReq("pd.lease", "all", 5, "p2"))
		r.pushN(false, "pd.lease", "p2", 2)
		r.pop(auto)
		r.pushN(false, "pd.lease", "p2", 2)
		auto.byName = true
		r.pop(auto)
	}},
}
