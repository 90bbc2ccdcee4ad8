package cursors

import (
	"context"
	"time"
)

const (
	// sweepEvery: how often a bridge looks in the Store for consumers idle
	// past their inactive threshold that no bridge serves, as when their
	// bridge stopped or died before the threshold passed.
	sweepEvery = 30 * time.Second
	// sweepGrace: a consumer served and in use records its activity every
	// touchEvery, so one recorded idle this much longer than its threshold
	// is served by no bridge, or idle where it is.
	sweepGrace = 2 * touchEvery
	// sweepMax bounds the consumers one sweep takes.
	sweepMax = 256
	// thresholdKey is InactiveThreshold's key in encodeConfig's JSON.
	thresholdKey = "InactiveThreshold"
)

// sweepLoop sweeps every sweepEvery until the engine stops.
func (e *JSEngine) sweepLoop() {
	defer e.bg.Done()
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-e.quit:
			return
		case <-t.C:
			if _, err := e.sweepIdle(); err != nil {
				e.cfg.Logger.Warn().Err(err).Msg("idle consumers not swept; trying again later")
			}
		}
	}
}

// sweepIdle makes live here the idle consumers that this bridge owns (on
// its streams): each then ends as any idle consumer does, deleted once its
// inactive threshold passes from now with no pull and no ack. It answers
// how many it took.
func (e *JSEngine) sweepIdle() (int, error) {
	var idle []StoredConsumer
	err := e.call(func(ctx context.Context) error {
		var err error
		idle, err = e.cfg.Store.IdleConsumers(ctx, sweepGrace, thresholdKey, sweepMax)
		return err
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range idle {
		if err := e.ctx.Err(); err != nil {
			return n, err // stopping
		}
		if _, err := e.stream(c.Queue); err != nil {
			continue // a queue this bridge does not serve as a stream
		}
		if self, _ := e.cfg.Owner(c.Tenant, c.Queue, "$js."+c.Name); !self {
			continue
		}
		if e.with(c.Tenant, c.Queue, c.Name, func(*consumer, error, bool) {}) == nil {
			n++
		}
	}
	return n, nil
}
