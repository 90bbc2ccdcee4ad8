package durability

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/internal/every"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/queenbridge/queenbridge/spool"
)

// The drain replays the spool through fusion, oldest first, with each
// record's original message id and transactionId, whenever maintenance is off
// and the database answers. Replayed segments are always probed for
// duplicates (MinWindowSeconds), whatever the queue's window, over at least
// the time since the record was spooled: a record spooled after an ambiguous
// failure may have been committed after all, and is then answered duplicate
// and removed. Records that fail again stay, and the drain backs off.

var errMaintenance = errors.New("durability: maintenance mode turned on during the drain")

// kickDrain wakes the drain loop without blocking.
func (k *Keeper) kickDrain() {
	select {
	case k.drainKick <- struct{}{}:
	default:
	}
}

func (k *Keeper) drainLoop() {
	defer k.bg.Done()
	t := time.NewTicker(k.cfg.DrainInterval)
	defer t.Stop()
	backoff := time.Duration(0)
	var retryAt time.Time
	for {
		select {
		case <-k.quit:
			return
		case <-k.drainKick:
		case <-t.C:
		}
		if k.maintenance.Load() || k.cfg.Spool.Stats().Records == 0 || time.Now().Before(retryAt) {
			continue
		}
		err := k.drainOnce()
		if err == nil {
			backoff, retryAt = 0, time.Time{}
			continue
		}
		backoff = min(max(2*backoff, 100*time.Millisecond), 10*time.Second)
		retryAt = time.Now().Add(backoff)
		k.drainErrors.Add(1)
		if !errors.Is(err, errMaintenance) && !errors.Is(err, context.Canceled) && drainErrLog.Allow() {
			k.cfg.Logger.Warn().Str("target", "spool").Err(err).Dur("retry_in", backoff).Msg("drain stopped; records stay in the spool")
		}
	}
}

func (k *Keeper) drainOnce() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	err := k.cfg.DB.Ping(ctx)
	cancel()
	if err != nil {
		return err
	}
	// Stop ends a drain between chunks: the file in progress stays and is
	// replayed (deduplicated) by the next start, rather than holding Stop
	// until the whole spool is through.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-k.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	n, err := k.cfg.Spool.Drain(ctx, k.replay)
	k.replayed.Add(uint64(n))
	return err
}

// replay submits one chunk of records and waits for their verdicts.
func (k *Keeper) replay(ctx context.Context, recs []spool.Record) ([]spool.Record, error) {
	if k.maintenance.Load() {
		return nil, errMaintenance
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	type pkey struct {
		tenant           tenancy.TenantID
		queue, partition string
	}
	type rgroup struct {
		k    pkey
		recs []int
	}
	var groups []*rgroup
	byKey := map[pkey]*rgroup{}
	for i := range recs {
		k := pkey{recs[i].Tenant, recs[i].Queue, recs[i].Partition}
		g := byKey[k]
		if g == nil {
			g = &rgroup{k: k}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.recs = append(g.recs, i)
	}
	failed := make([]bool, len(recs))
	done := make(chan struct{}, len(groups))
	submitted := 0
	var submitErr error
	for _, g := range groups {
		frames := make([]segment.Frame, len(g.recs))
		window := int32(0)
		for j, i := range g.recs {
			r := &recs[i]
			frames[j] = segment.Frame{ID: r.MessageID, TransactionID: r.TransactionID, TraceID: r.TraceID, Flags: r.Flags, Payload: r.Payload,
				Subject: r.Subject, Header: r.Header}
			window = max(window, probeWindow(r.SpooledAt))
		}
		g := g
		err := k.cfg.Fusion.Submit(ctx, fusion.Submission{
			Tenant: g.k.tenant, Queue: g.k.queue, Partition: g.k.partition, Frames: frames, MinWindowSeconds: window,
			Done: func(vs []fusion.Verdict) {
				for j, v := range vs {
					failed[g.recs[j]] = v.Status == fusion.Error
				}
				done <- struct{}{}
			},
		})
		if err != nil {
			submitErr = err
			break
		}
		submitted++
	}
	for i := 0; i < submitted; i++ {
		<-done
	}
	if submitErr != nil {
		return nil, fmt.Errorf("durability: replay: %w", submitErr)
	}
	var keep []spool.Record
	for i := range recs {
		if failed[i] {
			keep = append(keep, recs[i])
		}
	}
	return keep, nil
}

// probeWindow covers the time since a record was spooled, plus a minute of
// margin for clocks and commit latency.
func probeWindow(spooledAt time.Time) int32 {
	s := math.Ceil(time.Since(spooledAt).Seconds()) + 60
	return int32(min(max(s, 60), math.MaxInt32))
}

// drainErrLog lets one drain warning through per 10s.
var drainErrLog = every.New(10 * time.Second)
