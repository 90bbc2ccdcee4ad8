package pgwire_test

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/queenbridge/queenbridge/storage"
)

// The steps of the pop's differential test, each played on every side.

// push appends a segment of one to four messages to each partition named.
// foreign: another bridge wrote it, so no hot tail hears of the commit.
func (r *popDiff) push(foreign bool, queue string, parts ...string) {
	r.t.Helper()
	sizes := make([]int, len(parts))
	for i := range sizes {
		sizes[i] = 1 + r.rng.Intn(4)
	}
	r.pushSized(foreign, queue, parts, sizes)
}

// pushN appends a segment of n messages to one partition.
func (r *popDiff) pushN(foreign bool, queue, part string, n int) {
	r.t.Helper()
	r.pushSized(foreign, queue, []string{part}, []int{n})
}

// pushSized appends a segment of sizes[i] messages to parts[i].
func (r *popDiff) pushSized(foreign bool, queue string, parts []string, sizes []int) {
	r.t.Helper()
	var writes []segment.Write
	var desc []string
	for i, p := range parts {
		ids := make([]string, sizes[i])
		for k := range ids {
			r.pushed++
			ids[k] = fmt.Sprint("m", r.pushed)
		}
		writes = append(writes, write(queue, p, ids...))
		desc = append(desc, fmt.Sprintf("%s+%d", p, len(ids)))
	}
	who := "push"
	if foreign {
		who = "push from another bridge"
	}
	r.logStep("%s %s %s", who, queue, strings.Join(desc, " "))
	for i, s := range r.sides {
		res, err := s.db.PushBundle(r.ctx, writes)
		if err != nil {
			r.fatalf("push on %s: %v", s.name, err)
		}
		for k, w := range writes {
			key := queue + "/" + w.Partition
			if res[k].Status != segment.Queued {
				r.fatalf("push to %s on %s: %+v", key, s.name, res[k])
			}
			if i == 0 {
				r.pids[key], r.last[key] = res[k].PartitionID, res[k].BaseOffset+int64(w.Count)-1
				r.stored[key] = append(r.stored[key], txidsOf(r.t, w)...)
			} else if r.pids[key] != res[k].PartitionID || r.last[key] != res[k].BaseOffset+int64(w.Count)-1 {
				r.fatalf("push to %s on %s: partition %d at %d, on %s %d at %d", key, s.name, res[k].PartitionID, res[k].BaseOffset,
					r.sides[0].name, r.pids[key], r.last[key])
			}
		}
		if !foreign {
			s.tail.Committed(writes, res)
		}
	}
	r.compare()
}

// pdPopReq is a pop step: one group's pop of one or more partitions of a
// queue, under one lease.
type pdPopReq struct {
	tenant       tenancy.TenantID
	queue, group string
	parts        []string
	batch        int
	auto         bool
	byName       bool // the function side finds the partition by name
}

// pdAnswer is what one side's pop of one partition answered.
type pdAnswer struct {
	res  pgwire.PopResult
	gone []int64
}

// describe is what must be the same on every side: the status, the
// partition, the offsets where they mean something (a delivery's range; a
// range of tombstones stepped over; the cursor an empty pop found), the
// tombstoned offsets, the lease, and the messages.
func (a pdAnswer) describe() string {
	res := a.res
	s := fmt.Sprintf("%s %q last %d", res.Status, res.Partition, res.Last)
	switch {
	case res.Status == pgwire.PopDelivered || (res.Status == pgwire.PopEmpty && len(a.gone) > 0):
		s += fmt.Sprintf(" (%d, %d]", res.Cursor, res.To)
	case res.Status == pgwire.PopEmpty:
		s += fmt.Sprintf(" cursor %d", res.Cursor)
	}
	s += fmt.Sprintf(" gone %v expired %v leased %v", a.gone, res.Expired, !res.LeaseExpires.IsZero())
	var msgs []string
	for _, m := range res.Messages {
		msgs = append(msgs, fmt.Sprintf("%d:%s:%s", m.Offset, m.Frame.TransactionID, m.Frame.Payload))
	}
	return s + " [" + strings.Join(msgs, " ") + "]"
}

// pop plays a pop step on every side and checks that they answered alike.
func (r *popDiff) pop(req pdPopReq) {
	r.t.Helper()
	q := r.queues[req.queue]
	lease := [16]byte(uuid.New())
	mode, from := pdSubscription(req.group)
	// What the tail takes decides the batch: a tail that holds less than
	// the batch of a partition that goes on (another bridge wrote the rest)
	// delivers what it holds, by design; every side then pops that many.
	takes := map[string]pdTake{}
	batch := map[string]int{}
	for _, p := range req.parts {
		batch[p] = req.batch
		var first *pdTake
		for _, s := range r.sides {
			if s.tail == nil {
				continue
			}
			tk, ok := takeOf(s, r.pids[req.queue+"/"+p], req.group, req.batch)
			if first == nil {
				first = &tk
				if ok {
					takes[p] = tk
				}
			} else if tk.describe() != first.describe() {
				r.fatalf("the tails differ: %s against %s", tk.describe(), first.describe())
			}
		}
		if tk, ok := takes[p]; ok && tk.Count < req.batch && tk.To < r.last[req.queue+"/"+p] {
			batch[p] = tk.Count
			r.cov.add("tail: prefix of the partition")
		}
	}
	r.logStep("pop %s for %s of %v, batch %d, auto-ack %v, by name %v, tenant %x", req.queue, req.group, req.parts, req.batch, req.auto,
		req.byName, req.tenant[:1])
	answers := make([]map[string]pdAnswer, len(r.sides))
	applied := make([]map[string]bool, len(r.sides))
	for i, s := range r.sides {
		answers[i], applied[i] = map[string]pdAnswer{}, map[string]bool{}
		base := pgwire.PopRequest{Tenant: req.tenant, Queue: req.queue, Group: req.group, Lease: lease, AutoAck: req.auto,
			SubscriptionMode: mode, SubscriptionFrom: from}
		var claims []pgwire.TailClaim
		var claimed []string
		for _, p := range req.parts {
			if tk, ok := takes[p]; ok && s.tail != nil {
				claims = append(claims, pgwire.TailClaim{Tenant: req.tenant, Group: req.group, Lease: lease, AutoAck: req.auto,
					PartitionID: tk.PartitionID, Cursor: tk.Cursor, To: tk.To, Count: tk.Count, Hashes: tk.Hashes, FirstEnd: tk.FirstEnd})
				claimed = append(claimed, p)
			}
		}
		if len(claims) > 0 {
			out, err := s.db.PopTail(r.ctx, claims)
			if err != nil {
				r.fatalf("tail claim on %s: %v", s.name, err)
			}
			for k, res := range out {
				p := claimed[k]
				if res.Status != pgwire.PopDelivered {
					s.tail.SetCursor(claims[k].PartitionID, req.group, -1) // as the consume room: learn it again
					continue
				}
				tk := takes[p]
				res.Messages = tk.messages(r)
				answers[i][p], applied[i][p] = pdAnswer{res: res}, true
			}
		}
		for _, p := range req.parts {
			if applied[i][p] {
				continue
			}
			pr := base
			pr.Batch, pr.PartitionID = batch[p], r.pids[req.queue+"/"+p]
			answers[i][p] = r.popDB(s, pr, req.byName, p)
		}
		for _, p := range req.parts {
			a := answers[i][p]
			r.noteCursor(s, req, r.pids[req.queue+"/"+p], a.res)
			if a.res.Status == pgwire.PopDelivered || (a.res.Status == pgwire.PopEmpty && len(a.gone) > 0) {
				s.claimed[pdRow{req.queue, p, req.group}] = applied[i][p]
			}
		}
	}
	// Every side answered the same for every partition.
	delivered := pdPop{queue: req.queue, group: req.group, lease: lease, auto: req.auto, parts: map[string][]string{}}
	var got []string
	together := 0 // claims applied in one statement
	for _, ok := range applied[len(r.sides)-1] {
		if ok {
			together++
		}
	}
	for _, p := range req.parts {
		want := answers[0][p].describe()
		for i, s := range r.sides[1:] {
			if d := answers[i+1][p].describe(); d != want {
				r.fatalf("the pops of %s differ:\n%-12s %s\n%-12s %s", p, r.sides[0].name, want, s.name, d)
			}
		}
		got = append(got, p+": "+want)
		a := answers[0][p]
		r.count(req, p, a)
		r.checkTail(req, p, takes, applied, together, a)
		if a.res.Status == pgwire.PopDelivered {
			delivered.parts[p] = txids(a.res.Messages)
			if !req.auto {
				r.checkLease(req, p, q.leaseTime)
			}
		}
	}
	r.note(" -> %s", strings.Join(got, "; "))
	if len(delivered.parts) > 0 {
		r.pops = append(r.pops, delivered)
	}
	r.compare()
}

// popDB is a pop through PostgreSQL on side s: consumer_pop_v1 on the
// function side; elsewhere popKnownSQL, and consumer_pop_v1 where it
// answers "general", which it must do exactly for a group's first pop of
// the partition and for a windowBuffer queue.
func (r *popDiff) popDB(s *popSide, pr pgwire.PopRequest, byName bool, part string) pdAnswer {
	r.t.Helper()
	if s.name != "function" {
		res, gone, general, err := s.db.PopKnownOnce(r.ctx, pr)
		if err != nil {
			r.fatalf("popKnownSQL on %s: %v", s.name, err)
		}
		_, seeded := r.rows[pdRow{pr.Queue, part, pr.Group}]
		first, window := !seeded && pr.Tenant == pdTenant, r.queues[pr.Queue].window && pr.Tenant == pdTenant
		if general != (first || window) {
			r.fatalf("popKnownSQL on %s answered %q (general %v) for a first pop %v of a windowBuffer queue %v", s.name, res.Status, general, first, window)
		}
		if !general {
			return pdAnswer{res: res, gone: gone}
		}
		if first {
			r.cov.add("known: general for a first pop")
		} else {
			r.cov.add("known: general for windowBuffer")
		}
	} else if byName {
		pr.PartitionID, pr.Partition = 0, part
	}
	res, gone, err := s.db.PopFunctionOnce(r.ctx, pr)
	if err != nil {
		r.fatalf("consumer_pop_v1 on %s: %v", s.name, err)
	}
	return pdAnswer{res: res, gone: gone}
}

// noteCursor tells a tail side's tail the cursor a pop saw, as the consume
// room does: after an auto-ack delivery its end, after a delivery under a
// lease or an empty pop where the cursor stands.
func (r *popDiff) noteCursor(s *popSide, req pdPopReq, pid int64, res pgwire.PopResult) {
	switch {
	case s.tail == nil || res.PartitionID <= 0:
	case res.Status == pgwire.PopDelivered && req.auto:
		s.tail.SetCursor(pid, req.group, res.To)
	case res.Status == pgwire.PopDelivered || res.Status == pgwire.PopEmpty:
		s.tail.SetCursor(pid, req.group, res.Cursor)
	}
}

// count records what a pop reached.
func (r *popDiff) count(req pdPopReq, part string, a pdAnswer) {
	row := pdRow{req.queue, part, req.group}
	if _, seeded := r.rows[row]; !seeded && req.tenant == pdTenant && a.res.Status != pgwire.PopWindow {
		r.cov.add("first pop: " + req.group)
	}
	switch a.res.Status {
	case pgwire.PopDelivered:
		r.cov.add("delivered")
		if a.res.Expired {
			r.cov.add("expired lease taken over")
		}
		if len(a.gone) > 0 {
			r.cov.add("tombstones left out")
		}
		if req.auto {
			r.cov.add("auto-ack")
		}
		if req.byName {
			r.cov.add("by name")
		}
		if len(req.parts) > 1 {
			r.cov.add("several partitions")
		}
		if n := len(a.res.Messages); n > 0 && a.res.Messages[0].Offset > a.res.Cursor+1 && len(a.gone) == 0 {
			r.cov.add("retention removed the first segments")
		}
	case pgwire.PopEmpty:
		r.cov.add("empty")
		if len(a.gone) > 0 {
			r.cov.add("stepped over tombstones")
		}
		if r.queues[req.queue].delay && a.res.Last > a.res.Cursor {
			r.cov.add("delayed")
		}
	default:
		r.cov.add(a.res.Status)
	}
}

// checkTail holds each tail side's claim to the others' answer: it
// applied exactly when they delivered what it took and its queue neither
// delays nor windows messages (the claim leaves those to PostgreSQL by
// design).
func (r *popDiff) checkTail(req pdPopReq, part string, takes map[string]pdTake, applied []map[string]bool, together int, ref pdAnswer) {
	r.t.Helper()
	tk, ok := takes[part]
	if !ok {
		return
	}
	q := r.queues[req.queue]
	res := ref.res
	same := res.Status == pgwire.PopDelivered && res.Cursor == tk.Cursor && res.To == tk.To && len(ref.gone) == 0 && len(res.Messages) == tk.Count
	want := same && !q.delay && !q.window
	for i, s := range r.sides {
		if s.tail == nil {
			continue
		}
		if applied[i][part] != want {
			r.fatalf("the tail claim on %s of %s applied %v; the other pops answered %s to a claim of (%d, %d], %d messages, first segment ending at %d",
				s.name, part, applied[i][part], ref.describe(), tk.Cursor, tk.To, tk.Count, tk.FirstEnd)
		}
	}
	if want {
		r.cov.add("tail: applied")
		if together > 1 {
			r.cov.add("tail: applied several")
		} else {
			r.cov.add("tail: applied one")
		}
		if res.Expired {
			r.cov.add("tail: applied over an expired lease")
		}
		if req.auto {
			r.cov.add("tail: applied auto-ack")
		}
		return
	}
	switch {
	case req.tenant != pdTenant:
		r.cov.add("tail refused: tenant")
	case q.delay || q.window:
		r.cov.add("tail refused: options")
	case res.Status == pgwire.PopLeased:
		r.cov.add("tail refused: leased")
	case res.Cursor != tk.Cursor:
		r.cov.add("tail refused: stale cursor")
	case len(ref.gone) > 0:
		r.cov.add("tail refused: tombstones")
	case len(res.Messages) > 0 && res.Messages[0].Offset > tk.Cursor+1:
		r.cov.add("tail refused: retention")
	default:
		r.cov.add("tail refused: other")
	}
}

// checkLease holds every side's claim of part to the queue's lease time.
func (r *popDiff) checkLease(req pdPopReq, part string, seconds int) {
	r.t.Helper()
	for _, s := range r.sides {
		var got float64
		if err := s.db.Pool().QueryRow(r.ctx, `SELECT round(extract(epoch FROM c.lease_expires_at - c.updated_at))
			FROM queen.consumer_cursors c WHERE c.partition_id = $1 AND c.consumer_group = $2`, r.pids[req.queue+"/"+part], req.group).Scan(&got); err != nil {
			r.fatalf("lease of %s on %s: %v", part, s.name, err)
		}
		if int(got) != seconds {
			r.fatalf("the claim of %s on %s leased it for %v s, want the queue's %d", part, s.name, got, seconds)
		}
		// The lease lives until an expire step ends it, whatever the
		// test's pace.
		if _, err := s.db.Pool().Exec(r.ctx, `UPDATE queen.consumer_cursors SET lease_expires_at = lease_expires_at + interval '1 day'
			WHERE partition_id = $1 AND consumer_group = $2`, r.pids[req.queue+"/"+part], req.group); err != nil {
			r.fatalf("lengthen the lease on %s: %v", s.name, err)
		}
	}
}

// ack acknowledges txids of what pop p delivered on part with one status,
// under its lease, on every side; foreign: through another bridge, so no
// hot tail hears of the cursor it leaves.
func (r *popDiff) ack(p pdPop, part string, txids []string, status string, foreign bool) {
	r.t.Helper()
	pid := r.pids[p.queue+"/"+part]
	items := make([]pgwire.AckItem, len(txids))
	for i, tx := range txids {
		items[i] = pgwire.AckItem{TransactionID: tx, Status: status}
	}
	r.logStep("ack %s %s/%s for %s %v, foreign %v", status, p.queue, part, p.group, txids, foreign)
	var want string
	for i, s := range r.sides {
		var lease *[16]byte
		if !p.auto {
			lease = &p.lease
		}
		res, err := s.db.Ack(r.ctx, pdTenant, pid, p.group, lease, items)
		if err != nil {
			r.fatalf("ack on %s: %v", s.name, err)
		}
		got := fmt.Sprintf("errs %q dead %v released %v cursor %d", res.Errs, res.DLQ, res.Released, res.Cursor)
		if i == 0 {
			want = got
			r.note(" -> %s", got)
		} else if got != want {
			r.fatalf("the acks differ:\n%-12s %s\n%-12s %s", r.sides[0].name, want, s.name, got)
		}
		if !foreign && res.Queue != "" {
			s.tail.SetCursor(pid, p.group, res.Cursor)
		}
		if i == 0 {
			if res.Released {
				r.cov.add("ack: released")
			}
			if status == "retry" || status == "failed" {
				r.cov.add("ack: retry")
			}
			if foreign {
				r.cov.add("ack: foreign")
			}
		}
	}
	r.compare()
}

// expire ends the lease of pop p where it still holds, as its time passing
// would.
func (r *popDiff) expire(p pdPop) {
	r.t.Helper()
	r.logStep("expire the lease of %s's pop of %s", p.group, p.queue)
	var want int64
	for i, s := range r.sides {
		tag, err := s.db.Pool().Exec(r.ctx, `UPDATE queen.consumer_cursors SET lease_expires_at = clock_timestamp() - interval '1 second'
			WHERE lease_id = $1 AND lease_expires_at > clock_timestamp()`, uuid.UUID(p.lease))
		if err != nil {
			r.fatalf("expire on %s: %v", s.name, err)
		}
		if i == 0 {
			want = tag.RowsAffected()
			r.note(" (%d rows)", want)
		} else if tag.RowsAffected() != want {
			r.fatalf("the lease held %d rows on %s, %d on %s", tag.RowsAffected(), s.name, want, r.sides[0].name)
		}
	}
	r.compare()
}

// delete tombstones a message on every side.
func (r *popDiff) delete(queue, part, txid string) {
	r.t.Helper()
	key := queue + "/" + part
	r.logStep("delete %s of %s", txid, key)
	var want bool
	for i, s := range r.sides {
		ok, err := s.db.DeleteMessage(r.ctx, pdTenant, r.pids[key], txid)
		if err != nil {
			r.fatalf("delete %s on %s: %v", txid, s.name, err)
		}
		if i == 0 {
			want = ok
			r.note(" -> deleted %v", ok) // false: retention removed it
		} else if ok != want {
			r.fatalf("delete %s: %v on %s, %v on %s", txid, ok, s.name, want, r.sides[0].name)
		}
	}
	r.stored[key] = slices.DeleteFunc(r.stored[key], func(s string) bool { return s == txid })
	r.compare()
}

// age dates every fresh segment to the next second of 2000-01-01: past
// every delayedProcessing and windowBuffer, and retention's to remove.
func (r *popDiff) age() {
	r.t.Helper()
	r.ages++
	r.logStep("age: fresh segments are now of %s", popDiffEpoch.Add(timeSeconds(r.ages)).Format(time.TimeOnly))
	for _, s := range r.sides {
		for _, table := range []string{"log_segments", "log_txns"} {
			if _, err := s.db.Pool().Exec(r.ctx, `UPDATE queen.`+table+` SET created_at = $1 WHERE created_at > $2`,
				popDiffEpoch.Add(timeSeconds(r.ages)), popDiffEpoch.Add(24*time.Hour)); err != nil {
				r.fatalf("age on %s: %v", s.name, err)
			}
		}
	}
	r.compare()
}

// retention runs one retention step, removing up to batch of the aged
// segments of each partition of the queues that keep a day.
func (r *popDiff) retention(batch int) {
	r.t.Helper()
	r.logStep("retention step of %d", batch)
	var want storage.RetentionResult
	for i, s := range r.sides {
		res, err := s.db.RetentionStep(r.ctx, 64, batch)
		if err != nil {
			r.fatalf("retention on %s: %v", s.name, err)
		}
		if i == 0 {
			want = res
			r.note(" -> %+v", res)
		} else if res != want {
			r.fatalf("retention removed %+v on %s, %+v on %s", res, s.name, want, r.sides[0].name)
		}
	}
	r.compare()
}
