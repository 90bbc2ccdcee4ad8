package durability

import (
	"context"
	"time"

	"github.com/queenbridge/queenbridge/internal/every"
)

// retentionStep runs bounded retention steps back to back while they find
// work (at most 100 per tick), so a backlog clears without any one step
// holding partition locks for long, then purges what deleted queues left.
// Called every RetentionInterval.
func (k *Keeper) retentionStep() {
	defer k.purgeStep()
	k.steps("retention step failed", func(ctx context.Context) (int, error) {
		r, err := k.cfg.DB.RetentionStep(ctx, 16, 500)
		if err != nil {
			return 0, err
		}
		k.retainedSegments.Add(uint64(r.Segments))
		return r.Partitions, nil
	})
}

// purgeStep removes, in bounded steps (at most 100 per tick), the segments
// and hash blobs of deleted queues (pgwire.PurgeStep). It locks no
// partition or consumer row: those partitions are gone.
func (k *Keeper) purgeStep() {
	k.steps("purge step failed", func(ctx context.Context) (int, error) {
		r, err := k.cfg.DB.PurgeStep(ctx, purgePartitions, purgeRows)
		return r.Partitions, err
	})
}

// A purge step looks at this many deleted partitions and removes at most
// this many rows of each table.
const purgePartitions, purgeRows = 16, 500

// Purge runs purge steps back to back until nothing is left to purge or ctx
// ends: the share a queue delete does before it answers (retention ticks
// do the rest).
func (k *Keeper) Purge(ctx context.Context) error {
	for ctx.Err() == nil {
		r, err := k.cfg.DB.PurgeStep(ctx, purgePartitions, purgeRows)
		if err != nil || r.Partitions == 0 {
			return err
		}
	}
	return nil
}

// steps runs step (10 s each) back to back while it finds work: until it
// looks at no partition, fails (logged as failed), has run 100 times, or
// the keeper stops.
func (k *Keeper) steps(failed string, step func(context.Context) (partitions int, err error)) {
	for i := 0; i < 100; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		n, err := step(ctx)
		cancel()
		if err != nil {
			if retentionErrLog.Allow() {
				k.cfg.Logger.Warn().Str("target", "pgwire").Err(err).Msg(failed)
			}
			return
		}
		if n == 0 {
			return
		}
		select {
		case <-k.quit:
			return
		default:
		}
	}
}

var retentionErrLog = every.New(10 * time.Second)
