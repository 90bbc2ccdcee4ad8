package durability

import (
	"context"

	"github.com/queenbridge/queenbridge/jsonapi"
)

// ServeMaintenance runs a maintenance request as the transports serve it:
// a read (enabled nil) or a set, which is stored, applied and broadcast
// (SetMaintenance); err is the decoding's (jsonapi.DecodeMaintenance).
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
	return jsonapi.StatusOK, jsonapi.AppendMaintenance(nil, jsonapi.Maintenance{On: st.Maintenance, Buffered: st.SpoolRecords, BufferHealthy: st.SpoolHealthy})
}
