package bridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The goroutines of TestSectionTwelveUnderConcurrency: each records what
// the bridge answered it, and a failure instead of failing the test.

// produce pushes partitions a and b of A, k in order, one request per k
// holding both and the same two partitions of R; it calls made after the
// first request was answered.
func (r *concRun) produce(a, b int) {
	for k := 0; k < r.perPart && !r.failed(); k++ {
		var its []string
		for _, p := range []int{a, b} {
			its = append(its, item(qIntake, fmt.Sprintf("p%d", p), fmt.Sprintf("p%d-%d", p, k)),
				item(qShort, fmt.Sprintf("p%d", p), fmt.Sprintf("r%d-%d", p, k)))
		}
		status, out, err := r.do(http.MethodPost, "/api/v1/push", []byte(items(its...)))
		var rs []result
		if err != nil || status != http.StatusCreated || json.Unmarshal(out, &rs) != nil || len(rs) != len(its) {
			r.fail("push: %d %s %v", status, out, err)
			return
		}
		r.mu.Lock()
		for _, res := range rs {
			// The only writer of the partition: k gets offset k+1, in A and R.
			if res.Status != "queued" || res.Offset != int64(k+1) {
				r.errs = append(r.errs, fmt.Sprintf("push of %s/%s %s: %+v, want queued at %d", res.Queue, res.Partition, res.TransactionID, res, k+1))
			}
			if res.Queue == qShort {
				r.shortOffsets[res.Partition] = append(r.shortOffsets[res.Partition], res.Offset)
			} else if k%25 == 0 {
				r.createdAt = append(r.createdAt, res.CreatedAt)
			}
		}
		r.mu.Unlock()
	}
}

// txnOp is one operation of a transaction's body.
type txnOp map[string]any

// pipeline pops batches of A with g and moves each to B in one
// transaction: the pushes (one operation per partition, in the batch's
// order), then the acknowledgements.
func (r *concRun) pipeline(rnd *rand.Rand) {
	for batches := 0; r.moved.Load() < int64(r.total) && r.running(); {
		q := url.Values{"consumerGroup": {groupPipe}, "batch": {strconv.Itoa(1 + rnd.Intn(10))}, "wait": {"true"}, "timeout": {"200"}}
		if rnd.Intn(3) == 0 {
			q.Set("partitions", "2") // one lease over two partitions: one transaction over both
		}
		p, ok := r.pop(qIntake, q)
		if !ok {
			continue
		}
		batches++
		// One push operation per partition, its items in delivery order;
		// the answer has one result per item, in that order (flat), then
		// one per acknowledgement.
		var order []string
		byPart := map[string][]int{}
		for i, m := range p.Messages {
			if _, ok := byPart[m.Partition]; !ok {
				order = append(order, m.Partition)
			}
			byPart[m.Partition] = append(byPart[m.Partition], i)
		}
		var ops []txnOp
		var flat []int
		for _, part := range order {
			var its []txnOp
			for _, i := range byPart[part] {
				its = append(its, txnOp{"queue": qOutlet, "partition": part, "payload": txnOp{"a": p.Messages[i].TransactionID}})
				flat = append(flat, i)
			}
			ops = append(ops, txnOp{"type": "push", "items": its})
		}
		for _, m := range p.Messages {
			ops = append(ops, txnOp{"type": "ack", "transactionId": m.TransactionID, "partitionId": m.PartitionID, "status": "completed", "consumerGroup": groupPipe})
		}
		if batches%5 == 0 {
			// An acknowledgement that cannot apply aborts everything: no
			// push to B, no acknowledgement on A, the lease still held.
			bad := append(append([]txnOp{}, ops...), txnOp{"type": "ack", "transactionId": "never-pushed", "partitionId": p.Messages[0].PartitionID, "consumerGroup": groupPipe})
			a, ok := r.transaction(bad, p)
			if !ok {
				return
			}
			if a.Success || !strings.Contains(errText(a.Error), "Message not found") || len(a.Results) != 0 {
				r.fail("a transaction with an acknowledgement of an unknown message: %+v (error %s)", a, errText(a.Error))
				return
			}
			r.rollbacks.Add(1)
		}
		a, ok := r.transaction(ops, p)
		if !ok {
			return
		}
		if !a.Success || len(a.Results) != 2*len(p.Messages) {
			r.fail("pipeline transaction: %+v (error %s)", a, errText(a.Error))
			return
		}
		r.commits.Add(1)
		r.mu.Lock()
		for k, i := range flat {
			m, res := p.Messages[i], a.Results[k]
			if res.Type != "push" || !res.Success || res.QueueName != qOutlet || res.Partition != m.Partition || res.Offset < 1 {
				r.errs = append(r.errs, fmt.Sprintf("push result for %s: %+v", m.TransactionID, res))
			}
			if _, again := r.outlet[m.TransactionID]; again {
				r.errs = append(r.errs, fmt.Sprintf("%s moved to B twice", m.TransactionID))
			}
			r.outlet[m.TransactionID] = res.Offset
		}
		for _, res := range a.Results[len(flat):] {
			if res.Type != "ack" || !res.Success || res.DLQ {
				r.errs = append(r.errs, fmt.Sprintf("ack result: %+v", res))
			}
		}
		r.mu.Unlock()
		r.moved.Add(int64(len(p.Messages)))
	}
}

// transaction posts ops with the pop's lease in requiredLeases, as Queen's
// TransactionBuilder does.
func (r *concRun) transaction(ops []txnOp, p popped) (txnAnswer, bool) {
	leases := []string{}
	if p.LeaseID != "" {
		leases = append(leases, p.LeaseID)
	}
	body, _ := json.Marshal(map[string]any{"operations": ops, "requiredLeases": leases})
	status, out, err := r.do(http.MethodPost, "/api/v1/transaction", body)
	var a txnAnswer
	if err != nil || status != http.StatusOK || json.Unmarshal(out, &a) != nil {
		r.fail("transaction: %d %s %v", status, out, err)
		return a, false
	}
	return a, true
}

// plain pops A with group "plain" and acknowledges each delivery in one
// batch: every acknowledgement must apply.
func (r *concRun) plain(rnd *rand.Rand) {
	for r.acked.Load() < int64(r.total) && r.running() {
		q := url.Values{"consumerGroup": {groupPlain}, "batch": {strconv.Itoa(1 + rnd.Intn(10))}, "wait": {"true"}, "timeout": {"200"}}
		if rnd.Intn(3) == 0 {
			q.Set("partitions", "2")
		}
		p, ok := r.pop(qIntake, q)
		if !ok {
			continue
		}
		r.record(groupPlain, p)
		res, ok := r.ack(p, groupPlain)
		if !ok {
			return
		}
		for i, a := range res {
			if !a.Success || a.TransactionID != p.Messages[i].TransactionID || a.QueueName != qIntake {
				r.fail("plain ack of %s: %+v (error %s)", p.Messages[i].TransactionID, a, errText(a.Error))
			}
		}
		r.acked.Add(int64(len(p.Messages)))
	}
}

// churned pops A with group and acknowledges each delivery while others
// seek or delete the group: an acknowledgement applies or fails for one of
// the allowed reasons (the seek or the delete took the lease). It paces
// the seekers and deleters through pace, one round per pop.
func (r *concRun) churned(group string, pace chan struct{}, extra []string, allowed ...string) {
	rnd := rand.New(rand.NewSource(int64(len(group))))
	for round := 0; !r.stopped(round); round++ {
		select {
		case pace <- struct{}{}:
		default:
		}
		q := url.Values{"consumerGroup": {group}, "batch": {strconv.Itoa(1 + rnd.Intn(10))}, "wait": {"true"}, "timeout": {"100"}}
		for i := 0; i+1 < len(extra); i += 2 {
			q.Set(extra[i], extra[i+1])
		}
		p, ok := r.pop(qIntake, q)
		if !ok {
			continue
		}
		r.record(group, p)
		res, ok := r.ack(p, group)
		if !ok {
			return
		}
		for i, a := range res {
			if !a.Success && !slices.Contains(allowed, errText(a.Error)) {
				r.fail("%s ack of %s: %+v (error %s)", group, p.Messages[i].TransactionID, a, errText(a.Error))
			}
			if !a.Success {
				r.refused.Add(1)
			}
		}
	}
}

// waitPace waits for the next round of the goroutine pace belongs to; once
// the run is over the remaining rounds go at once.
func (r *concRun) waitPace(pace chan struct{}) {
	select {
	case <-pace:
	case <-r.stop:
	}
}

// seeker moves group "seek" on A to the end and back (to the beginning or
// to the time of one of A's pushes), in turn, one move per pace.
func (r *concRun) seeker(pace chan struct{}, seed int64) {
	rnd := rand.New(rand.NewSource(seed))
	for round := 0; !r.stopped(round); round++ {
		r.waitPace(pace)
		body := `{"toEnd":true}`
		if (round+int(seed))%2 == 0 {
			at := "2000-01-01T00:00:00Z"
			r.mu.Lock()
			if len(r.createdAt) > 0 && rnd.Intn(2) == 0 {
				at = r.createdAt[rnd.Intn(len(r.createdAt))]
			}
			r.mu.Unlock()
			body = fmt.Sprintf(`{"timestamp":%q}`, at)
		}
		if !r.seek(groupSeek, body) {
			return
		}
	}
}

func (r *concRun) seek(group, body string) bool {
	status, out, err := r.do(http.MethodPost, cgPath(group, "queues", qIntake, "seek"), []byte(body))
	var a cgSeekAnswer
	if err != nil || status != http.StatusOK || json.Unmarshal(out, &a) != nil || !a.Success || a.PartitionsUpdated > r.parts {
		r.fail("seek of %s %s: %d %s %v", group, body, status, out, err)
		return false
	}
	r.seeks.Add(1)
	return true
}

// deleter deletes group "doomed", keeping or deleting its subscription in
// turn, one delete per pace; with each delete it sends a seek of the group
// to its end, at the same moment: both lock the group's cursor rows, all
// of them, and must take them in the same order.
func (r *concRun) deleter(pace chan struct{}, seed int) {
	for round := 0; !r.stopped(round); round++ {
		r.waitPace(pace)
		seeked := make(chan bool, 1)
		go func() { seeked <- r.seek(groupDoomed, `{"toEnd":true}`) }()
		path := cgPath(groupDoomed) + "?deleteMetadata=" + strconv.FormatBool((round+seed)%2 == 0)
		status, out, err := r.do(http.MethodDelete, path, nil)
		var a cgDeleteAnswer
		if err != nil || status != http.StatusOK || json.Unmarshal(out, &a) != nil || !a.Success || a.DeletedPartitions > r.parts {
			r.fail("delete %s: %d %s %v", path, status, out, err)
		}
		if !<-seeked || r.failed() {
			return
		}
		r.groupDeletes.Add(1)
	}
}

// churnQueue pushes to C, pops it (queue mode) and acknowledges, while
// churnDeletes deletes C. A push racing a delete lands in the old queue or
// in a new one of that name (docs/admin.md), queued either way, even when it
// named a partition id the delete removed; an acknowledgement may find its
// partition or lease gone.
func (r *concRun) churnQueue(pace chan struct{}) {
	allowed := []string{"no partition with this partitionId", "the consumer group has not popped this partition", "lease expired or not held"}
	for round := 0; !r.stopped(round); round++ {
		select {
		case pace <- struct{}{}:
		default:
		}
		if !r.pushC(fmt.Sprintf("c%d", round)) {
			return
		}
		p, ok := r.pop(qChurn, url.Values{"batch": {"10"}})
		if !ok {
			continue
		}
		res, ok := r.ack(p, "")
		if !ok {
			return
		}
		for i, a := range res {
			if !a.Success && !slices.Contains(allowed, errText(a.Error)) {
				r.fail("C ack of %s: %+v (error %s)", p.Messages[i].TransactionID, a, errText(a.Error))
			}
			if !a.Success {
				r.refused.Add(1)
			}
		}
	}
}

// pushC pushes one message to each of four partitions of C.
func (r *concRun) pushC(tag string) bool {
	var its []string
	for p := 0; p < 4; p++ {
		its = append(its, item(qChurn, fmt.Sprintf("p%d", p), fmt.Sprintf("%s-%d", tag, p)))
	}
	status, out, err := r.do(http.MethodPost, "/api/v1/push", []byte(items(its...)))
	var rs []result
	if err != nil || status != http.StatusCreated || json.Unmarshal(out, &rs) != nil || len(rs) != len(its) {
		r.fail("push to C: %d %s %v", status, out, err)
		return false
	}
	for _, res := range rs {
		if res.Status != "queued" {
			r.fail("push to C: %+v", res)
		}
	}
	return true
}

// churnDeletes deletes C, one delete per pace, each sent together with a
// transaction that pushes to four partitions of C: both lock those
// partition rows, all in one statement, and must take them in the same
// order. The transaction commits, into the old queue or a new one of that
// name.
func (r *concRun) churnDeletes(pace chan struct{}) {
	for round := 0; !r.stopped(round); round++ {
		r.waitPace(pace)
		pushed := make(chan bool, 1)
		go func() { pushed <- r.pushCInTransaction(fmt.Sprintf("d%d", round)) }()
		status, out, err := r.do(http.MethodDelete, "/api/v1/resources/queues/"+qChurn, nil)
		if err != nil || status != http.StatusOK || !strings.HasPrefix(string(out), `{"deleted":true,"queue":"`+qChurn+`"`) {
			r.fail("delete C: %d %s %v", status, out, err)
		}
		if !<-pushed || r.failed() {
			return
		}
		r.queueDeletes.Add(1)
	}
}

func (r *concRun) pushCInTransaction(tag string) bool {
	var its []txnOp
	for p := 0; p < 4; p++ {
		its = append(its, txnOp{"queue": qChurn, "partition": fmt.Sprintf("p%d", p), "payload": txnOp{"t": tag}})
	}
	a, ok := r.transaction([]txnOp{{"type": "push", "items": its}}, popped{})
	switch {
	case !ok:
		return false
	case a.Success:
		r.commits.Add(1)
	default:
		r.fail("a transaction pushing to C: %+v (error %s)", a, errText(a.Error))
		return false
	}
	return true
}

// retention runs the retention step and the purge of deleted queues'
// segments, as the bridge's keeper does, every few milliseconds; here an
// error fails the test instead of being logged.
func (r *concRun) retention() {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for round := 0; !r.stopped(round); round++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := r.n.db.RetentionStep(ctx, 16, 100)
		if err == nil {
			_, err = r.n.db.PurgeStep(ctx, 16, 100)
		}
		cancel()
		if err != nil {
			r.fail("retention: %v", err)
			return
		}
		r.retentionSteps.Add(1)
		select {
		case <-tick.C:
		case <-r.stop:
		}
	}
}
