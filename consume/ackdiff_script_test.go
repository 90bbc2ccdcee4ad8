package consume

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/cursors"
	"github.com/queenbridge/queenbridge/segment"
)

// The steps of the differential test's script. Each is made once from the
// seed and played on both sides; the acknowledgements name leases by the
// pop that took them (each side has its own lease ids).

// diffPop is what a pop delivered (the same on both sides).
type diffPop struct{ parts []diffPart }

type diffPart struct {
	pid   int64
	txids []string
}

func (p diffPop) part(pid int64) *diffPart {
	for i := range p.parts {
		if p.parts[i].pid == pid {
			return &p.parts[i]
		}
	}
	return nil
}

// ackRef is one acknowledgement of the script: pop is the pop whose lease
// it names, -1 for none.
type ackRef struct {
	tx     string
	pid    int64
	pop    int
	status AckStatus
	err    string
}

// diffAckStep is one acknowledgement step: its requests, sent one after the
// other, or all at once when concurrent (they touch different partitions).
type diffAckStep struct {
	kind       string
	reqs       [][]ackRef
	concurrent bool
}

// push appends a segment of one to four messages to each partition named.
func (r *diffRun) push(parts []int) {
	r.t.Helper()
	var writes []segment.Write
	var desc []string
	for _, i := range parts {
		frames := make([]segment.Frame, 1+r.rng.Intn(4))
		for k := range frames {
			r.pushed++
			frames[k] = segment.Frame{ID: uuid.Must(uuid.NewV7()), TransactionID: fmt.Sprint("m", r.pushed), Payload: []byte(fmt.Sprintf(`{"n":%d}`, r.pushed))}
		}
		writes = append(writes, segmentOf(r.queue, r.names[i], frames))
		desc = append(desc, fmt.Sprintf("%s+%d", r.names[i], len(frames)))
	}
	r.logStep("push %s", strings.Join(desc, " "))
	res, err := r.db.PushBundle(r.ctx, writes)
	if err != nil {
		r.fatalf("push: %v", err)
	}
	for k, w := range writes {
		if res[k].Status != segment.Queued {
			r.fatalf("push to %s: %+v", w.Partition, res[k])
		}
		r.pids[w.Partition] = res[k].PartitionID
		frames, _ := segment.UnpackAll(w.Blob)
		for _, f := range frames {
			r.stored = append(r.stored, storedMsg{pid: res[k].PartitionID, tx: f.TransactionID})
		}
	}
}

// storedMsg is a message the script pushed.
type storedMsg struct {
	pid int64
	tx  string
}

// tombstone deletes a message the script pushed (both sides consume the
// same partitions): from then on every pop skips it, and a copy delivered
// before stays acknowledgeable.
func (r *diffRun) tombstone() {
	r.t.Helper()
	if len(r.stored) == 0 {
		r.push([]int{r.rng.Intn(diffPartitions)})
		return
	}
	i := r.rng.Intn(len(r.stored))
	m := r.stored[i]
	r.stored = slices.Delete(r.stored, i, i+1)
	r.logStep("delete %s of partition %d", m.tx, m.pid)
	ok, err := r.db.DeleteMessage(r.ctx, diffTenant, m.pid, m.tx)
	if err != nil || !ok {
		r.fatalf("delete %s: %v %v", m.tx, ok, err)
	}
	r.cov.add("delete")
}

// pop pops one or two partitions on both sides, by name or by id, sometimes
// cut by a byte bound, and checks that both delivered the same.
func (r *diffRun) pop() {
	r.t.Helper()
	k := 1 + r.rng.Intn(2)
	req := PopRequest{Queue: r.queue, Batch: 1 + r.rng.Intn(6), Partitions: k, SubscriptionMode: "all"}
	var cands []cursors.Candidate
	how := "claims"
	perm := r.rng.Perm(diffPartitions)[:k]
	if k == 1 && r.rng.Intn(4) == 0 {
		req.Partition, how = r.names[perm[0]], "named "+r.names[perm[0]]
	} else {
		for _, i := range perm {
			c := cursors.Candidate{Name: r.names[i]}
			if r.rng.Intn(5) != 0 {
				c.ID = r.pids[r.names[i]] // by id (the one-statement pop once the row exists), else by name
			}
			cands = append(cands, c)
			how += fmt.Sprintf(" %s(id %d)", c.Name, c.ID)
		}
	}
	if r.rng.Intn(6) == 0 {
		req.MaxBytes = 1300 // two messages (each counts 512 bytes and its fields)
	}
	r.logStep("pop #%d: %s, batch %d, maxBytes %d", len(r.pops), how, req.Batch, req.MaxBytes)
	var got [2]Popped
	for s, side := range r.sides {
		side.marks.mu.Lock()
		side.marks.cands = cands
		side.marks.mu.Unlock()
		req.Group = side.group
		p, err := side.c.Pop(r.ctx, diffTenant, req)
		if err != nil {
			r.fatalf("pop on the %s side: %v", side.name, err)
		}
		got[s] = p
		side.leases = append(side.leases, p.Lease)
	}
	if f, g := describePopped(got[0]), describePopped(got[1]); f != g {
		r.fatalf("the pops differ:\nfast    %s\ngeneral %s", f, g)
	}
	var p diffPop
	for _, part := range got[0].Parts {
		d := diffPart{pid: part.PartitionID}
		for _, m := range part.Messages {
			d.txids = append(d.txids, m.Frame.TransactionID)
		}
		p.parts = append(p.parts, d)
		if n := len(part.Messages); n > 0 && part.Messages[n-1].Offset-part.Messages[0].Offset >= int64(n) {
			r.cov.add("a delivery with a hole")
		}
		if part.Expired {
			r.cov.add("pop took over an expired lease")
		}
	}
	r.history[len(r.history)-1] += " -> " + describePopped(got[0])
	r.pops = append(r.pops, p)
}

func describePopped(p Popped) string {
	var out []string
	for _, part := range p.Parts {
		var msgs []string
		for _, m := range part.Messages {
			msgs = append(msgs, fmt.Sprintf("%d:%s", m.Offset, m.Frame.TransactionID))
		}
		out = append(out, fmt.Sprintf("%d/%s (%d, %d] of %d expired %v [%s]", part.PartitionID, part.Partition, part.Cursor, part.To,
			part.Last, part.Expired, strings.Join(msgs, " ")))
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, "; ")
}

// expire makes a pop's lease expire on both sides, as its lease time
// passing would: lease_expires_at in the past.
func (r *diffRun) expire() {
	r.t.Helper()
	if len(r.pops) == 0 {
		r.pop()
		return
	}
	p := len(r.pops) - 1
	if r.rng.Intn(3) == 0 {
		p = r.rng.Intn(len(r.pops))
	}
	var n [2]int64
	for s, side := range r.sides {
		tag, err := r.db.Pool().Exec(r.ctx, `UPDATE queen.consumer_cursors SET lease_expires_at = clock_timestamp() - interval '1 second'
			WHERE lease_id = $1 AND consumer_group = $2`, uuid.UUID(side.leases[p]), side.group)
		if err != nil {
			r.fatalf("expire: %v", err)
		}
		n[s] = tag.RowsAffected()
	}
	r.logStep("expire the lease of pop #%d (%d rows)", p, n[0])
	if n[0] != n[1] {
		r.fatalf("the lease of pop #%d held %d rows on the fast side, %d on the general", p, n[0], n[1])
	}
	if n[0] > 0 {
		r.cov.add("expire")
	}
}

// ack makes one acknowledgement step and plays it on both sides: mostly of
// the latest pop whose lease still holds a partition, else of the latest
// that delivered something.
func (r *diffRun) ack() {
	r.t.Helper()
	latest, holding := -1, -1
	for i := len(r.pops) - 1; i >= 0; i-- {
		for _, part := range r.pops[i].parts {
			if latest < 0 {
				latest = i
			}
			if row := r.rows[part.pid]; holding < 0 && row.held && r.rowLeases[part.pid] == r.sides[0].leases[i] {
				holding = i
			}
		}
	}
	if latest < 0 {
		r.pop()
		return
	}
	if holding >= 0 && r.rng.Intn(8) != 0 {
		latest = holding
	}
	st := r.ackStep(latest)
	r.last = st
	r.play(st)
}

var diffKinds = []struct {
	kind   string
	weight int
}{
	{"whole", 30}, {"whole-two", 6}, {"split", 6}, {"partial", 8}, {"mixed", 8}, {"reordered", 6}, {"unknown", 6},
	{"repeat", 6}, {"doubled", 3}, {"stale", 6}, {"old", 5}, {"nolease", 6}, {"badstatus", 3},
}

// ackStep picks a kind of acknowledgement and builds it, mostly of the
// latest pop that delivered something.
func (r *diffRun) ackStep(latest int) diffAckStep {
	total := 0
	for _, k := range diffKinds {
		total += k.weight
	}
	x, kind := r.rng.Intn(total), ""
	for _, k := range diffKinds {
		if x -= k.weight; x < 0 {
			kind = k.kind
			break
		}
	}
	p := r.pops[latest]
	one := p.parts[r.rng.Intn(len(p.parts))]
	st := diffAckStep{kind: kind}
	switch kind {
	case "whole":
		var groups [][]ackRef
		for _, part := range p.parts {
			groups = append(groups, r.whole(part, latest, r.wholeStatus()))
		}
		st.reqs = [][]ackRef{r.interleave(groups)}
	case "whole-two":
		other := r.rng.Intn(len(r.pops))
		groups := [][]ackRef{r.whole(one, latest, r.wholeStatus())}
		for _, part := range r.pops[other].parts {
			groups = append(groups, r.whole(part, other, r.wholeStatus()))
		}
		st.reqs = [][]ackRef{r.interleave(groups)}
	case "split":
		for _, part := range p.parts {
			st.reqs = append(st.reqs, r.whole(part, latest, r.wholeStatus()))
		}
		st.concurrent = true
	case "partial":
		refs := r.whole(one, latest, r.wholeStatus())
		keep := refs[:0:0]
		for len(keep) == 0 || (len(keep) == len(refs) && len(refs) > 1) {
			keep = keep[:0]
			for _, a := range refs {
				if r.rng.Intn(2) == 0 {
					keep = append(keep, a)
				}
			}
		}
		groups := [][]ackRef{keep}
		for _, part := range p.parts {
			if part.pid != one.pid && r.rng.Intn(2) == 0 {
				groups = append(groups, r.whole(part, latest, r.wholeStatus())) // beside a whole batch of the same lease
			}
		}
		st.reqs = [][]ackRef{r.interleave(groups)}
	case "doubled":
		refs := r.whole(one, latest, r.wholeStatus())
		st.reqs = [][]ackRef{append(refs, refs...)}
	case "mixed":
		refs := r.whole(one, latest, Completed)
		all := []AckStatus{Completed, Success, "", Failed, DeadLetter, Retry}
		for i := range refs {
			refs[i].status = all[r.rng.Intn(len(all))]
			refs[i].err = r.someError(refs[i].status)
		}
		st.reqs = [][]ackRef{refs}
	case "reordered":
		refs := r.whole(one, latest, r.wholeStatus())
		if len(refs) > 1 {
			i := r.rng.Intn(len(refs) - 1)
			refs[i], refs[len(refs)-1] = refs[len(refs)-1], refs[i]
		}
		st.reqs = [][]ackRef{refs}
	case "unknown":
		refs := r.whole(one, latest, r.wholeStatus())
		unknown := ackRef{tx: fmt.Sprint("never-", r.step), pid: one.pid, pop: latest, status: refs[0].status}
		if r.rng.Intn(3) == 0 {
			refs = []ackRef{unknown}
		} else {
			refs = slices.Insert(refs, r.rng.Intn(len(refs)+1), unknown)
		}
		st.reqs = [][]ackRef{refs}
	case "repeat":
		if r.last.reqs == nil {
			st.reqs = [][]ackRef{r.whole(one, latest, r.wholeStatus())}
		} else {
			st.reqs, st.concurrent = r.last.reqs, r.last.concurrent
		}
	case "stale":
		st.reqs = [][]ackRef{r.whole(one, r.rng.Intn(latest+1), r.wholeStatus())} // an earlier pop's lease (or, by chance, the right one)
	case "old":
		old := r.rng.Intn(latest + 1)
		for len(r.pops[old].parts) == 0 {
			old = r.rng.Intn(latest + 1)
		}
		part := r.pops[old].parts[r.rng.Intn(len(r.pops[old].parts))]
		st.reqs = [][]ackRef{r.whole(part, old, r.wholeStatus())}
	case "nolease":
		st.reqs = [][]ackRef{r.whole(one, -1, r.wholeStatus())}
	case "badstatus":
		st.reqs = [][]ackRef{r.whole(one, latest, "bogus")}
	}
	return st
}

// whole acknowledges every message of a delivery, in order, naming the
// lease of pop lease; completed is sent as completed, success or "" at
// random (all the same status).
func (r *diffRun) whole(part diffPart, lease int, status AckStatus) []ackRef {
	out := make([]ackRef, len(part.txids))
	for i, tx := range part.txids {
		s := status
		if s == Completed {
			s = []AckStatus{Completed, Success, ""}[r.rng.Intn(3)]
		}
		out[i] = ackRef{tx: tx, pid: part.pid, pop: lease, status: s, err: r.someError(s)}
	}
	return out
}

func (r *diffRun) wholeStatus() AckStatus {
	return []AckStatus{Completed, Completed, Failed, Failed, Failed, DeadLetter, Retry}[r.rng.Intn(7)]
}

func (r *diffRun) someError(s AckStatus) string {
	if (s == Failed || s == DeadLetter) && r.rng.Intn(3) != 0 {
		return fmt.Sprint("boom at step ", r.step)
	}
	return ""
}

// interleave merges groups of acknowledgements into one request at random,
// keeping each group's order.
func (r *diffRun) interleave(groups [][]ackRef) []ackRef {
	var out []ackRef
	for {
		var left []int
		for i, g := range groups {
			if len(g) > 0 {
				left = append(left, i)
			}
		}
		if len(left) == 0 {
			return out
		}
		i := left[r.rng.Intn(len(left))]
		out = append(out, groups[i][0])
		groups[i] = groups[i][1:]
	}
}

// acks turns the script's acknowledgements into this side's.
func (side *diffSide) acks(refs []ackRef) []Ack {
	out := make([]Ack, len(refs))
	for i, a := range refs {
		out[i] = Ack{TransactionID: a.tx, PartitionID: a.pid, Group: side.group, Status: a.status, Error: a.err}
		if a.pop >= 0 {
			l := side.leases[a.pop]
			out[i].Lease = &l
		}
	}
	return out
}

// send plays an acknowledgement step on one side.
func (side *diffSide) send(r *diffRun, st diffAckStep) [][]AckOutcome {
	out := make([][]AckOutcome, len(st.reqs))
	if !st.concurrent {
		for i, refs := range st.reqs {
			out[i] = side.c.Ack(r.ctx, diffTenant, side.acks(refs))
		}
		return out
	}
	var wg sync.WaitGroup
	for i, refs := range st.reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = side.c.Ack(r.ctx, diffTenant, side.acks(refs))
		}()
	}
	wg.Wait()
	return out
}
