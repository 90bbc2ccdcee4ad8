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
	for i := 0; i < 100; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := k.cfg.DB.RetentionStep(ctx, 16, 500)
		cancel()
		if err != nil {
			if retentionErrLog.Allow() {
				k.cfg.Logger.Warn().Str("target", "pgwire").Err(err).Msg("retention step failed")
			}
			return
		}
		k.retainedSegments.Add(uint64(r.Segments))
		if r.Partitions == 0 {
			return
		}
		select {
		case <-k.quit:
			return
		default:
		}
	}
}

// purgeStep removes, in bounded steps (at most 100 per tick), the segments
// and hash blobs of deleted queues (pgwire.PurgeStep). It locks no
// partition or consumer row: those partitions are gone.
func (k *Keeper) purgeStep() {
	for i := 0; i < 100; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := k.cfg.DB.PurgeStep(ctx, 16, 500)
		cancel()
		if err != nil {
			if retentionErrLog.Allow() {
				k.cfg.Logger.Warn().Str("target", "pgwire").Err(err).Msg("purge step failed")
			}
			return
		}
		if r.Partitions == 0 {
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
