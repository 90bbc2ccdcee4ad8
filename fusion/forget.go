package fusion

import (
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// queueRef names a queue of a tenant; applied receives one value from each
// shard once that shard has forgotten the queue.
type queueRef struct {
	tenant  tenancy.TenantID
	queue   string
	applied chan<- struct{}
}

// Forget drops what fusion knows of a deleted queue's partitions: their
// ids, the hashes this bridge wrote to them, verified and the offsets seen.
// Without it a repeat of a transactionId of the deleted queue would be
// answered as a duplicate of a message that is gone, from the recent-hash
// set, instead of being stored in the queue of that name as it is now. A
// flush of one of them in flight when it arrives keeps its verdicts and
// teaches nothing; frames still pending stay pending and go to the queue
// of that name as it is when they flush. Every bridge calls it when it
// hears of the delete: the partition may be written by any of them. It
// returns once every shard has applied it, so a submission made after it
// returns meets the queue forgotten.
func (f *Fusion) Forget(tenant tenancy.TenantID, queue string) {
	f.gate.RLock()
	defer f.gate.RUnlock()
	if !f.started || f.stopped {
		return // not running: it knows nothing, or will not write again
	}
	applied := make(chan struct{}, len(f.shards))
	for _, s := range f.shards {
		s.forget <- queueRef{tenant: tenant, queue: queue, applied: applied} // shards read it until Stop, which waits for the gate
	}
	for range f.shards {
		<-applied // a submission after Forget returns meets the queue forgotten
	}
}

// forgetQueue resets every partition of the queue to what a partition
// never seen has, and moves its epoch on.
func (s *shard) forgetQueue(k queueRef) {
	for key, p := range s.parts {
		if key.tenant != k.tenant || key.queue != k.queue {
			continue
		}
		p.epoch++
		p.recent.Reset()
		p.pid, p.qid = 0, 0
		p.window = -1
		p.verified, p.latestEnd = 0, 0
		p.gapAt, p.gapHi, p.filling = time.Time{}, 0, false
	}
	k.applied <- struct{}{} // buffered for every shard: never blocks
}
