package bridge

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
)

// Maintenance mode: the flag lives in queen.system_state; the bridge that
// changes it broadcasts the change on <prefix>.v1.maintenance.changed so every
// bridge switches at once, and each bridge re-reads the flag every
// Config.MaintenancePoll as a backstop (a missed broadcast, a bridge that
// was down).

type maintenanceEvent struct {
	Enabled bool   `json:"enabled"`
	Origin  string `json:"origin"`
}

func (b *Bridge) changedSubject() string { return b.cfg.Prefix + ".v1.maintenance.changed" }

// applyMaintenance switches the local flag; leaving maintenance starts the
// drain.
func (b *Bridge) applyMaintenance(on bool) {
	if b.maintenance.Swap(on) != on {
		b.cfg.Logger.Info().Str("target", "bridge").Bool("enabled", on).Msg("maintenance mode changed")
	}
	if !on {
		b.kickDrain()
	}
}

// setMaintenance stores, applies and broadcasts the flag.
func (b *Bridge) setMaintenance(ctx context.Context, on bool) error {
	if err := b.cfg.DB.SetMaintenance(ctx, on); err != nil {
		return err
	}
	b.applyMaintenance(on)
	if b.cfg.NATS != nil {
		ev, _ := json.Marshal(maintenanceEvent{Enabled: on, Origin: b.id})
		if err := b.cfg.NATS.Publish(b.changedSubject(), ev); err != nil {
			b.cfg.Logger.Warn().Str("target", "bridge").Err(err).Msg("maintenance broadcast failed; peers will re-read the flag")
		}
	}
	return nil
}

// startMaintenance reads the flag, listens for broadcasts and polls.
func (b *Bridge) startMaintenance(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	on, err := b.cfg.DB.Maintenance(rctx)
	cancel()
	if err != nil {
		b.cfg.Logger.Warn().Str("target", "bridge").Err(err).Msg("maintenance flag unreadable at start; assuming off until the next poll")
	}
	b.maintenance.Store(on)
	if b.cfg.NATS != nil {
		sub, err := b.cfg.NATS.Subscribe(b.changedSubject(), func(m *nats.Msg) {
			var ev maintenanceEvent
			if json.Unmarshal(m.Data, &ev) == nil {
				b.applyMaintenance(ev.Enabled)
			}
		})
		if err != nil {
			return err
		}
		b.maintSub = sub
	}
	b.bg.Add(1)
	go b.tickLoop(b.cfg.MaintenancePoll, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		on, err := b.cfg.DB.Maintenance(ctx)
		cancel()
		if err == nil {
			b.applyMaintenance(on)
		}
	})
	return nil
}

// tickLoop calls fn every period until Stop; the caller has counted it in
// b.bg.
func (b *Bridge) tickLoop(period time.Duration, fn func()) {
	defer b.bg.Done()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-b.quit:
			return
		case <-t.C:
		}
		fn()
	}
}

// maintenanceAnswer is what both transports answer.
func (b *Bridge) maintenanceAnswer() []byte {
	out, _ := json.Marshal(map[string]any{"maintenanceMode": b.maintenance.Load(), "bufferedMessages": b.spooled()})
	return out
}

func (b *Bridge) spooled() int64 {
	if b.cfg.Spool == nil {
		return 0
	}
	return b.cfg.Spool.Stats().Records
}

// maintenance handles a read ({} or empty) or a set ({"enabled": bool}).
func (b *Bridge) maintenanceRequest(ctx context.Context, body []byte) (int, []byte) {
	var req struct {
		Enabled *bool `json:"enabled"`
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			return http.StatusBadRequest, errorBody("maintenance body: " + err.Error())
		}
	}
	if req.Enabled != nil {
		if err := b.setMaintenance(ctx, *req.Enabled); err != nil {
			return http.StatusServiceUnavailable, errorBody(err.Error())
		}
	}
	return http.StatusOK, b.maintenanceAnswer()
}

func (b *Bridge) httpMaintenance(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Method == http.MethodPost {
		var status int
		var err error
		if body, status, err = b.readBody(w, r); err != nil {
			writeJSON(w, status, errorBody(err.Error()))
			return
		}
	}
	status, out := b.maintenanceRequest(r.Context(), body)
	writeJSON(w, status, out)
}

func (b *Bridge) natsMaintenance(req micro.Request) {
	b.enqueue(req, func() {
		defer b.calls.Done()
		status, out := b.maintenanceRequest(context.Background(), req.Data())
		respondNATS(b.cfg.NATS, req, status, out)
	})
}
