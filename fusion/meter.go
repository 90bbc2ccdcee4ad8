package fusion

import (
	"context"
	"time"

	"github.com/queenbridge/queenbridge/internal/every"
)

// meterLoop measures the database's commit flush every FlushProbeEvery,
// from Start on, and hands it to the limit (inflightLimit.flushed). It is owned by
// Fusion and ends with Stop.
func (f *Fusion) meterLoop() {
	defer f.bgWG.Done()
	t := time.NewTicker(f.cfg.FlushProbeEvery)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(f.ctx, f.cfg.FlushTimeout)
		d, err := f.meter.FlushLatency(ctx)
		cancel()
		if err == nil {
			f.limit.flushed(d)
		} else if f.ctx.Err() == nil && meterErrLog.Allow() {
			f.cfg.Logger.Warn().Str("target", "fusion").Err(err).Msg("measuring the commit flush failed; bundles in flight stay as they are")
		}
		select {
		case <-f.ctx.Done():
			return
		case <-t.C:
		}
	}
}

var meterErrLog = every.New(time.Minute)
