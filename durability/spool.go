package durability

import (
	"context"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/segment"

	"github.com/queenbridge/queenbridge/spool"
)

// CanSpool reports whether there is a spool to take failed items.
func (k *Keeper) CanSpool() bool { return k.cfg.Spool != nil }

// Failed is a frame whose write failed, as it was to be written (encrypted
// already where its queue asks).
type Failed struct {
	Queue, Partition string
	Frame            *segment.Frame
}

// Spool appends the failed frames of a tenant (fsynced when it returns nil:
// they may be answered buffered) and wakes the drain. Only when CanSpool.
func (k *Keeper) Spool(ctx context.Context, tenant tenancy.TenantID, failed []Failed) error {
	now := time.Now()
	recs := make([]spool.Record, len(failed))
	for i, fl := range failed {
		f := fl.Frame
		recs[i] = spool.Record{Tenant: tenant, Queue: fl.Queue, Partition: fl.Partition, MessageID: f.ID,
			TransactionID: f.TransactionID, TraceID: f.TraceID, Flags: f.Flags, Payload: f.Payload, Subject: f.Subject, Header: f.Header, SpooledAt: now}
	}
	if err := k.cfg.Spool.Append(ctx, recs); err != nil {
		return err
	}
	k.kickDrain()
	return nil
}
