package console

import (
	"math"
	"strings"
	"testing"
	"time"
)

// The overview's times are UTC, its lists never null, and a figure JSON
// cannot carry is 0.
func TestEncodeBridgeOverview(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("x", 3600))
	out := string(EncodeBridgeOverview(BridgeOverview{Bridge: "b", Time: at, FlushMs: math.NaN(),
		History: []OverviewPoint{{Time: at, PushedPerSecond: math.Inf(1), SegmentsPerCommit: 2.5}}}))
	want := `{"bridge":"b","time":"2026-01-02T02:04:05.0000006Z","maintenance":false,"popMaintenance":false,` +
		`"spool":{"records":0,"bytes":0,"healthy":false},"bundlesInFlight":0,"inFlightLimit":0,"flushMs":0,"bundleLatencyMs":0,` +
		`"totals":{"pushed":0,"consumed":0,"commits":0,"segments":0},` +
		`"history":[{"time":"2026-01-02T02:04:05.0000006Z","pushedPerSecond":0,"consumedPerSecond":0,"segmentsPerCommit":2.5,"flushMs":0}],` +
		`"buckets":0,"bridges":[]}`
	if out != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	if out := string(EncodeBridgeOverview(BridgeOverview{})); !strings.Contains(out, `"history":[]`) {
		t.Fatalf("no history: %s", out)
	}
}
