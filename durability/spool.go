package durability

import (
	"context"

	"github.com/queenbridge/queenbridge/spool"
)

// CanSpool reports whether there is a spool to take failed items.
func (k *Keeper) CanSpool() bool { return k.cfg.Spool != nil }

// Spool appends records (fsynced when it returns nil: they may be answered
// buffered) and wakes the drain. Only when CanSpool.
func (k *Keeper) Spool(ctx context.Context, recs []spool.Record) error {
	if err := k.cfg.Spool.Append(ctx, recs); err != nil {
		return err
	}
	k.kickDrain()
	return nil
}

// Spooled is the number of records waiting in the spool (0 without one).
func (k *Keeper) Spooled() int64 {
	if k.cfg.Spool == nil {
		return 0
	}
	return k.cfg.Spool.Stats().Records
}
