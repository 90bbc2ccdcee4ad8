package durability

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/internal/peers"
)

// maintenanceEvent is the broadcast: every bridge applies it, its sender too.
type maintenanceEvent struct {
	Enabled bool   `json:"enabled"`
	Origin  string `json:"origin"`
}

// Maintenance reports maintenance mode as last learned.
func (k *Keeper) Maintenance() bool { return k.maintenance.Load() }

// applyMaintenance switches the local flag; leaving maintenance starts the
// drain.
func (k *Keeper) applyMaintenance(on bool) {
	if k.maintenance.Swap(on) != on {
		k.cfg.Logger.Info().Str("target", "bridge").Bool("enabled", on).Msg("maintenance mode changed")
	}
	if !on {
		k.kickDrain()
	}
}

// SetMaintenance stores, applies and broadcasts the flag.
func (k *Keeper) SetMaintenance(ctx context.Context, on bool) error {
	if err := k.cfg.DB.SetMaintenance(ctx, on); err != nil {
		return err
	}
	k.applyMaintenance(on)
	ev, _ := json.Marshal(maintenanceEvent{Enabled: on, Origin: k.cfg.Peers.Origin})
	if err := k.cfg.Peers.Publish(peers.MaintenanceChanged, ev); err != nil {
		k.cfg.Logger.Warn().Str("target", "bridge").Err(err).Msg("maintenance broadcast failed; peers will re-read the flag")
	}
	return nil
}

// startMaintenance reads the flag, listens for broadcasts and polls.
func (k *Keeper) startMaintenance(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	on, err := k.cfg.DB.Maintenance(rctx)
	cancel()
	if err != nil {
		k.cfg.Logger.Warn().Str("target", "bridge").Err(err).Msg("maintenance flag unreadable at start; assuming off until the next poll")
	}
	k.maintenance.Store(on)
	sub, err := k.cfg.Peers.Subscribe(peers.MaintenanceChanged, false, func(m *nats.Msg) {
		var ev maintenanceEvent
		if json.Unmarshal(m.Data, &ev) == nil {
			k.applyMaintenance(ev.Enabled)
		}
	})
	if err != nil {
		return err
	}
	k.sub = sub
	k.bg.Add(1)
	go k.tickLoop(k.cfg.MaintenancePoll, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		on, err := k.cfg.DB.Maintenance(ctx)
		cancel()
		if err == nil {
			k.applyMaintenance(on)
		}
	})
	return nil
}
