package consume

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/queenbridge/queenbridge/pgwire"
)

func leaseOf(b byte) *[16]byte { return &[16]byte{b} }

func leaseName(l *[16]byte) string {
	if l == nil {
		return "-"
	}
	return fmt.Sprint(l[0])
}

// Acks are applied one (partition, group, lease) at a time, in ascending
// partition id, then group, then lease, whatever order the request lists
// them in; each call carries its acks in request order, and the answers
// come back in request order.
func TestAcksAreGroupedAndAppliedInLockOrder(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	acks := []Ack{
		{TransactionID: "t0", PartitionID: 30, Group: "a", Lease: leaseOf(1), Status: Completed},
		{TransactionID: "t1", PartitionID: 10, Group: "b", Lease: leaseOf(1), Status: Completed},
		{TransactionID: "t2", PartitionID: 10, Group: "a", Lease: leaseOf(2), Status: Completed},
		{TransactionID: "t3", PartitionID: 20, Group: "a", Lease: leaseOf(1), Status: Completed},
		{TransactionID: "t4", PartitionID: 10, Group: "a", Lease: leaseOf(1), Status: Failed, Error: "boom"},
		{TransactionID: "t5", PartitionID: 10, Group: "a", Lease: nil, Status: Completed},
		{TransactionID: "t6", PartitionID: 30, Group: "a", Lease: leaseOf(1), Status: Retry},
		{TransactionID: "t7", PartitionID: 10, Group: "a", Lease: leaseOf(2), Status: DeadLetter},
	}
	out := r.c.Ack(context.Background(), tenant, acks)
	var calls []string
	for _, c := range r.store.ackCalls() {
		var items []string
		for _, it := range c.items {
			items = append(items, it.TransactionID+":"+it.Status+":"+it.Error)
		}
		calls = append(calls, fmt.Sprintf("%d %s %s %v", c.pid, c.group, leaseName(c.lease), items))
	}
	want := []string{
		"10 a - [t5:completed:]",
		"10 a 1 [t4:failed:boom]",
		"10 a 2 [t2:completed: t7:dlq:]",
		"10 b 1 [t1:completed:]",
		"20 a 1 [t3:completed:]",
		"30 a 1 [t0:completed: t6:retry:]",
	}
	if !slices.Equal(calls, want) {
		t.Errorf("calls\n%q\nwant\n%q", calls, want)
	}
	if len(out) != len(acks) {
		t.Fatalf("%d answers for %d acks", len(out), len(acks))
	}
	for i, o := range out {
		if o.TransactionID != acks[i].TransactionID || o.Err != "" || o.Queue != "q" || o.Partition != fmt.Sprint("p", acks[i].PartitionID) {
			t.Errorf("answer %d: %+v", i, o)
		}
	}
}

// A group whose call fails answers each of its acks with the error; the
// groups after it still apply.
func TestAFailingAckGroupDoesNotStopTheOthers(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	boom := errors.New("deadlock detected")
	r.store.ack = func(pid int64, items []pgwire.AckItem) (pgwire.AckResult, error) {
		if pid == 20 {
			return pgwire.AckResult{}, boom
		}
		return pgwire.AckResult{Errs: make([]string, len(items)), DLQ: make([]bool, len(items)), Released: true, Queue: "q", Partition: fmt.Sprint("p", pid)}, nil
	}
	acks := []Ack{
		{TransactionID: "a", PartitionID: 30, Group: "g", Status: Completed},
		{TransactionID: "b", PartitionID: 20, Group: "g", Status: Completed},
		{TransactionID: "c", PartitionID: 10, Group: "g", Status: Completed},
		{TransactionID: "d", PartitionID: 20, Group: "g", Status: Retry},
	}
	out := r.c.Ack(context.Background(), tenant, acks)
	var pids []int64
	for _, c := range r.store.ackCalls() {
		pids = append(pids, c.pid)
	}
	if !slices.Equal(pids, []int64{10, 20, 30}) {
		t.Errorf("calls for partitions %v", pids)
	}
	for i, o := range out {
		failed := acks[i].PartitionID == 20
		if o.TransactionID != acks[i].TransactionID || (o.Err == boom.Error()) != failed || (o.Err == "") == failed || o.LeaseReleased == failed {
			t.Errorf("answer %d: %+v", i, o)
		}
	}
	var released []string
	for _, rel := range r.marks.released {
		released = append(released, rel.partition)
	}
	if !slices.Equal(released, []string{"p10", "p30"}) {
		t.Errorf("released %v", released)
	}
	want := []acked{{"completed", true, false}, {"completed", false, false}, {"retry", false, false}, {"completed", true, false}}
	if !slices.Equal(r.obs.acked, want) {
		t.Errorf("observer heard %v, want %v", r.obs.acked, want)
	}
}

// The marks hear of a released lease, with again when an ack of the
// group hands messages back: a retry always, a failure that did not go to
// the dead letters. An ack the database refused hands nothing back.
func TestReleasedLeasesAreToldWhetherMessagesCameBack(t *testing.T) {
	t.Parallel()
	type item struct {
		status AckStatus
		dlq    bool
		err    string
	}
	for _, c := range []struct {
		name     string
		items    []item
		released bool
		queue    string
		told     bool
		again    bool
	}{
		{"completed", []item{{status: Completed}}, true, "q", true, false},
		{"success", []item{{status: Success}}, true, "q", true, false},
		{"retry", []item{{status: Retry}}, true, "q", true, true},
		{"failed below the retry limit", []item{{status: Failed}}, true, "q", true, true},
		{"failed to the dead letters", []item{{status: Failed, dlq: true}}, true, "q", true, false},
		{"dlq", []item{{status: DeadLetter, dlq: true}}, true, "q", true, false},
		{"completed and retry", []item{{status: Completed}, {status: Retry}}, true, "q", true, true},
		{"dead-lettered and completed", []item{{status: Failed, dlq: true}, {status: Completed}}, true, "q", true, false},
		{"a refused retry", []item{{status: Retry, err: "not delivered"}, {status: Completed}}, true, "q", true, false},
		{"not released", []item{{status: Retry}}, false, "q", false, false},
		{"unknown partition", []item{{status: Completed, err: "no such partition"}}, true, "", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			res := pgwire.AckResult{Released: c.released, Queue: c.queue, Partition: "p"}
			var acks []Ack
			for i, it := range c.items {
				acks = append(acks, Ack{TransactionID: fmt.Sprint(i), PartitionID: 5, Group: "g", Lease: leaseOf(1), Status: it.status})
				res.Errs, res.DLQ = append(res.Errs, it.err), append(res.DLQ, it.dlq)
			}
			r.store.ack = func(int64, []pgwire.AckItem) (pgwire.AckResult, error) { return res, nil }
			out := r.c.Ack(context.Background(), tenant, acks)
			var want []release
			if c.told {
				want = []release{{"q", "p", "g", c.again}}
			}
			if !slices.Equal(r.marks.released, want) {
				t.Errorf("released %+v, want %+v", r.marks.released, want)
			}
			for i, o := range out {
				it := c.items[i]
				if o.Err != it.err || o.DeadLettered != (it.dlq && it.err == "") || o.LeaseReleased != c.released {
					t.Errorf("answer %d: %+v", i, o)
				}
				if h := r.obs.acked[i]; h != (acked{string(it.status), it.err == "", it.dlq && it.err == ""}) {
					t.Errorf("observer heard %+v for %+v", h, it)
				}
			}
		})
	}
}

func TestAnEmptyAckMakesNoCall(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	if out := r.c.Ack(context.Background(), tenant, nil); len(out) != 0 {
		t.Errorf("answers %+v", out)
	}
	if n := len(r.store.ackCalls()); n != 0 {
		t.Errorf("%d calls", n)
	}
}
