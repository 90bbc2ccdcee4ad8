package metrics

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/segment"
)

// noSink is never called: the test only reads fusion's gauges.
type noSink struct{}

func (noSink) PushBundle(context.Context, []segment.Write) ([]segment.Result, error) {
	return nil, errors.New("not used")
}

func (noSink) SegmentAt(context.Context, int64, int64) (segment.Stored, error) {
	return segment.Stored{}, errors.New("not used")
}

// The limit of bundles in flight is exposed under its name and, with the
// same value, under the deprecated queen_vegas_limit.
func TestInFlightLimitUnderBothNames(t *testing.T) {
	t.Parallel()
	f, err := fusion.New(fusion.Config{Sink: noSink{}, InFlightMax: 5, InFlightInitial: 3})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	New(reg).RegisterFusion(f)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, fam := range families {
		if ms := fam.GetMetric(); len(ms) == 1 && ms[0].GetGauge() != nil {
			got[fam.GetName()] = ms[0].GetGauge().GetValue()
		}
	}
	for _, name := range []string{"queen_fusion_in_flight_limit", "queen_vegas_limit"} {
		if v, ok := got[name]; !ok || v != 3 {
			t.Errorf("%s = %v (present %v), want 3", name, v, ok)
		}
	}
}
