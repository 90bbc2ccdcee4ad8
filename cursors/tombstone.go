package cursors

import "github.com/queenbridge/queenbridge/internal/tenancy"

// Deleted is told that the messages with transactionId txid in partition
// pid were tombstoned (Queen's message delete, on this bridge or told by
// the bridge that served it). What this bridge holds of them in memory
// goes: the hot tail's segments of the partition, and the copies its live
// consumers hold, so that their first delivery, or a redelivery, reads
// PostgreSQL, which skips them and so counts them acknowledged. A delivery
// already made stands.
func (e *JSEngine) Deleted(tenant tenancy.TenantID, pid int64, txid string) {
	e.cfg.Tail.Forget(pid)
	e.mu.Lock()
	var cs []*consumer
	for k, c := range e.live {
		if k.tenant == tenant {
			cs = append(cs, c)
		}
	}
	e.mu.Unlock()
	for _, c := range cs {
		c.mu.Lock()
		if p := c.parts[pid]; p != nil {
			for _, s := range p.slots() {
				if s.m != nil && s.m.txid == txid {
					c.dropMsg(s)
				}
			}
		}
		c.mu.Unlock()
	}
}
