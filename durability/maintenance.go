package durability

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/internal/peers"
)

// Two switches are kept here, each the same way: a row of
// queen.system_state, applied locally, broadcast so that every bridge
// switches together, and re-read every MaintenancePoll as a backstop.
// Maintenance mode sends pushes to the spool; pop maintenance makes pops
// deliver nothing. Each has its own subject, so that a bridge that knows
// only the first never reads a change of the second as one of its own.

// maintenanceEvent is the broadcast: every bridge applies it, its sender too.
type maintenanceEvent struct {
	Enabled bool   `json:"enabled"`
	Origin  string `json:"origin"`
}

// Maintenance reports maintenance mode as last learned.
func (k *Keeper) Maintenance() bool { return k.maintenance.Load() }

// PopMaintenance reports pop maintenance as last learned: while on, pops
// deliver nothing (the consume room asks, consume.Config.PopMaintenance).
func (k *Keeper) PopMaintenance() bool { return k.popMaintenance.Load() }

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

func (k *Keeper) applyPopMaintenance(on bool) {
	if k.popMaintenance.Swap(on) != on {
		k.cfg.Logger.Info().Str("target", "bridge").Bool("enabled", on).Msg("pop maintenance mode changed")
	}
}

// SetMaintenance stores, applies and broadcasts the flag.
func (k *Keeper) SetMaintenance(ctx context.Context, on bool) error {
	if err := k.cfg.DB.SetMaintenance(ctx, on); err != nil {
		return err
	}
	k.applyMaintenance(on)
	k.broadcast(peers.MaintenanceChanged, on)
	return nil
}

// SetPopMaintenance stores, applies and broadcasts the pop maintenance
// switch.
func (k *Keeper) SetPopMaintenance(ctx context.Context, on bool) error {
	if err := k.cfg.DB.SetPopMaintenance(ctx, on); err != nil {
		return err
	}
	k.applyPopMaintenance(on)
	k.broadcast(peers.PopMaintenanceChanged, on)
	return nil
}

func (k *Keeper) broadcast(subject string, on bool) {
	ev, _ := json.Marshal(maintenanceEvent{Enabled: on, Origin: k.cfg.Peers.Origin})
	if err := k.cfg.Peers.Publish(subject, ev); err != nil {
		k.cfg.Logger.Warn().Str("target", "bridge").Str("subject", subject).Err(err).Msg("switch broadcast failed; peers will re-read it")
	}
}

// startMaintenance reads the switches, listens for broadcasts and polls.
func (k *Keeper) startMaintenance(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	sw, err := k.cfg.DB.ReadSwitches(rctx)
	cancel()
	if err != nil {
		k.cfg.Logger.Warn().Str("target", "bridge").Err(err).Msg("maintenance switches unreadable at start; assuming off until the next poll")
	}
	k.maintenance.Store(sw.Maintenance)
	k.popMaintenance.Store(sw.PopMaintenance)
	for _, s := range []struct {
		subject string
		sub     **nats.Subscription
		apply   func(bool)
	}{{peers.MaintenanceChanged, &k.sub, k.applyMaintenance}, {peers.PopMaintenanceChanged, &k.popSub, k.applyPopMaintenance}} {
		apply := s.apply
		sub, err := k.cfg.Peers.Subscribe(s.subject, false, func(m *nats.Msg) {
			var ev maintenanceEvent
			if json.Unmarshal(m.Data, &ev) == nil {
				apply(ev.Enabled)
			}
		})
		if err != nil {
			return err
		}
		*s.sub = sub
	}
	k.bg.Add(1)
	go k.tickLoop(k.cfg.MaintenancePoll, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		sw, err := k.cfg.DB.ReadSwitches(ctx)
		cancel()
		if err == nil {
			k.applyMaintenance(sw.Maintenance)
			k.applyPopMaintenance(sw.PopMaintenance)
		}
	})
	return nil
}
