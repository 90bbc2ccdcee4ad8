package bridge

import (
	"context"
	"time"

	"github.com/queenbridge/queenbridge/internal/every"
)

// retentionStep runs bounded retention steps back to back while they find
// work (at most 100 per tick), so a backlog clears without any one step
// holding partition locks for long. Called every RetentionInterval.
func (b *Bridge) retentionStep() {
	for i := 0; i < 100; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := b.cfg.DB.RetentionStep(ctx, 16, 500)
		cancel()
		if err != nil {
			if retentionErrLog.Allow() {
				b.cfg.Logger.Warn().Str("target", "pgwire").Err(err).Msg("retention step failed")
			}
			return
		}
		b.retainedSegments.Add(uint64(r.Segments))
		if r.Partitions == 0 {
			return
		}
		select {
		case <-b.quit:
			return
		default:
		}
	}
}

var retentionErrLog = every.New(10 * time.Second)
