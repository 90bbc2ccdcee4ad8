package fusion

import (
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testkit"
)

// deleteQueue removes a queue's partitions, as a queue delete does: a
// partition of that name made later is a new one, with a new id.
func (m *memSink) deleteQueue(q string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, p := range m.parts {
		if k == memKey([16]byte{}, q, "p") {
			delete(m.parts, k)
			m.parts[k+"\x00deleted"] = p
		}
	}
}

// After Forget, a repeat of a transactionId of the deleted queue is stored
// in the queue of that name as it is now, from offset 1, instead of being
// answered from the hashes this bridge wrote; other queues keep theirs.
func TestForgetDropsADeletedQueuesHashes(t *testing.T) {
	sink := newMemSink(t)
	f := startFusion(t, sink, nil)
	submit(t, f, "q", "p", "a", "b")
	submit(t, f, "other", "p", "a")
	sink.deleteQueue("q")
	f.Forget([16]byte{}, "q")
	if v := submit(t, f, "q", "p", "a"); v[0].Status != Queued || v[0].Offset != 1 {
		t.Fatalf("a repeat after the delete: %s at %d", statuses(v), v[0].Offset)
	}
	if v := submit(t, f, "q", "p", "b"); v[0].Status != Queued || v[0].Offset != 2 {
		t.Fatalf("another repeat after the delete: %s at %d", statuses(v), v[0].Offset)
	}
	if w := sink.lastWrite("q", "p"); w.Verified != 1 {
		t.Fatalf("the second write after Forget sends verified %d, want 1", w.Verified)
	}
	if w := sink.writes[len(sink.writes)-2][0]; w.PartitionID != 0 || w.Verified != 0 {
		t.Fatalf("the write after Forget names partition %d, verified %d", w.PartitionID, w.Verified)
	}
	calls := sink.callCount()
	if v := submit(t, f, "other", "p", "a"); v[0].Status != Duplicate || sink.callCount() != calls {
		t.Fatalf("another queue's repeat: %s, %d sink calls", statuses(v), sink.callCount()-calls)
	}
}

// A flush in flight when Forget arrives keeps its verdicts but teaches
// nothing: a repeat of what it wrote goes to the sink, not to the hashes
// of a queue that may be gone.
func TestForgetDuringAFlushTeachesNothing(t *testing.T) {
	sink := newMemSink(t)
	sink.gate = make(chan struct{})
	f := startFusion(t, sink, nil)
	ch := submitAsync(t, f, "q", "p", frames("a"))
	testkit.WaitFor(t, "the flush to start", time.Minute, func() bool { return sink.callCount() == 1 })
	f.Forget([16]byte{}, "q")
	close(sink.gate)
	if v := wait(t, ch); v[0].Status != Queued {
		t.Fatalf("the flush in flight: %s", statuses(v))
	}
	calls := sink.callCount()
	if v := submit(t, f, "q", "p", "a"); v[0].Status != Duplicate || sink.callCount() != calls+1 {
		t.Fatalf("a repeat: %s after %d sink calls, want the sink's duplicate", statuses(v), sink.callCount()-calls)
	}
}
