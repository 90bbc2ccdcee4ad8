package durability

import (
	"context"
	"time"

	"github.com/queenbridge/queenbridge/jsonapi"
)

// ServeMaintenance runs a maintenance request as the transports serve it:
// a read (enabled nil) or a set, which is stored, applied and broadcast
// (SetMaintenance). The transport decoded it (jsonapi.DecodeMaintenance,
// or jsonapi.DecodeSwitch over HTTP) and answers a body that does not
// decode.
func (k *Keeper) ServeMaintenance(ctx context.Context, enabled *bool) (int, []byte) {
	return serveSwitch(ctx, enabled, k.SetMaintenance, func() []byte {
		st := k.Stats()
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		dbUp := k.cfg.DB.Ping(pctx) == nil
		cancel()
		return jsonapi.AppendMaintenance(nil, jsonapi.Maintenance{On: st.Maintenance, PopOn: st.PopMaintenance,
			Buffered: st.SpoolRecords, BufferHealthy: st.SpoolHealthy, DBHealthy: dbUp})
	})
}

// ServePopMaintenance reads (enabled nil) or sets pop maintenance, as
// ServeMaintenance does maintenance mode.
func (k *Keeper) ServePopMaintenance(ctx context.Context, enabled *bool) (int, []byte) {
	return serveSwitch(ctx, enabled, k.SetPopMaintenance, func() []byte {
		return jsonapi.AppendPopMaintenance(nil, k.PopMaintenance())
	})
}

// serveSwitch runs a request for one switch: a set (enabled not nil) goes
// through set, a 503 when it fails; then answer, which reads the switch.
func serveSwitch(ctx context.Context, enabled *bool, set func(context.Context, bool) error, answer func() []byte) (int, []byte) {
	if enabled != nil {
		if err := set(ctx, *enabled); err != nil {
			return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, err.Error())
		}
	}
	return jsonapi.StatusOK, answer()
}

// ServeHealth answers GET /health: whether PostgreSQL answers a ping
// within a second and whether the NATS connection is up ("disabled"
// without one); 503 when either is down.
func (k *Keeper) ServeHealth(ctx context.Context) (int, []byte) {
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	pg, nc := "up", "up"
	if k.cfg.DB.Ping(pctx) != nil {
		pg = "down"
	}
	switch {
	case k.cfg.Peers.NATS == nil:
		nc = "disabled"
	case !k.cfg.Peers.NATS.IsConnected():
		nc = "down"
	}
	return jsonapi.AppendHealth(nil, pg, nc)
}
