package durability

import (
	"context"
	"time"

	"github.com/queenbridge/queenbridge/jsonapi"
)

// ServeMaintenance runs a maintenance request as the transports serve it:
// a read (enabled nil) or a set, which is stored, applied and broadcast
// (SetMaintenance); err is the decoding's (jsonapi.DecodeMaintenance, or
// jsonapi.DecodeSwitch over HTTP).
func (k *Keeper) ServeMaintenance(ctx context.Context, enabled *bool, err error) (int, []byte) {
	if err != nil {
		return jsonapi.StatusBadRequest, jsonapi.ErrorBody(err.Error())
	}
	if enabled != nil {
		if err := k.SetMaintenance(ctx, *enabled); err != nil {
			return jsonapi.StatusServiceUnavailable, jsonapi.ErrorBody(err.Error())
		}
	}
	st := k.Stats()
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	dbUp := k.cfg.DB.Ping(pctx) == nil
	cancel()
	return jsonapi.StatusOK, jsonapi.AppendMaintenance(nil, jsonapi.Maintenance{On: st.Maintenance, PopOn: st.PopMaintenance,
		Buffered: st.SpoolRecords, BufferHealthy: st.SpoolHealthy, DBHealthy: dbUp})
}

// ServePopMaintenance reads (enabled nil) or sets pop maintenance, as
// ServeMaintenance does maintenance mode.
func (k *Keeper) ServePopMaintenance(ctx context.Context, enabled *bool, err error) (int, []byte) {
	if err != nil {
		return jsonapi.StatusBadRequest, jsonapi.ErrorBody(err.Error())
	}
	if enabled != nil {
		if err := k.SetPopMaintenance(ctx, *enabled); err != nil {
			return jsonapi.StatusServiceUnavailable, jsonapi.ErrorBody(err.Error())
		}
	}
	return jsonapi.StatusOK, jsonapi.AppendPopMaintenance(nil, k.PopMaintenance())
}
