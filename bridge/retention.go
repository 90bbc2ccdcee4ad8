package bridge

import (
	"context"
	"time"

	"github.com/queenbridge/queenbridge/internal/every"
)

// retentionLoop runs bounded retention steps every RetentionInterval, and
// back to back while a step finds work, so a backlog clears without any one
// step holding partition locks for long.
func (b *Bridge) retentionLoop() {
	defer b.bg.Done()
	t := time.NewTicker(b.cfg.RetentionInterval)
	defer t.Stop()
	for {
		select {
		case <-b.quit:
			return
		case <-t.C:
		}
		for i := 0; i < 100; i++ {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			r, err := b.cfg.DB.RetentionStep(ctx, 16, 500)
			cancel()
			if err != nil {
				if retentionErrLog.Allow() {
					b.cfg.Logger.Warn().Str("target", "pgwire").Err(err).Msg("retention step failed")
				}
				break
			}
			b.retainedSegments.Add(uint64(r.Segments))
			if r.Partitions == 0 {
				break
			}
			select {
			case <-b.quit:
				return
			default:
			}
		}
	}
}

var retentionErrLog = every.New(10 * time.Second)
