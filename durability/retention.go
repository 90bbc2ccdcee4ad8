package durability

import (
	"context"
	"time"

	"github.com/queenbridge/queenbridge/internal/every"
)

// retentionStep runs bounded retention steps back to back while they find
// work (at most 100 per tick), so a backlog clears without any one step
// holding partition locks for long. Called every RetentionInterval.
func (k *Keeper) retentionStep() {
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

var retentionErrLog = every.New(10 * time.Second)
