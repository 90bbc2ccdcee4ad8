package console

import (
	"encoding/json"
	"math"
	"time"
)

// The answer of the console's own route (docs/console.md): this bridge's
// live figures. Times are RFC 3339 in UTC. Not a hot path: rendered by
// encoding/json from structs whose field order is the wire's.

// BridgeOverview is GET /api/v1/bridge/overview's answer.
type BridgeOverview struct {
	Bridge          string           `json:"bridge"`
	Time            time.Time        `json:"time"`
	Maintenance     bool             `json:"maintenance"`
	PopMaintenance  bool             `json:"popMaintenance"`
	Spool           OverviewSpool    `json:"spool"`
	BundlesInFlight int              `json:"bundlesInFlight"`
	InFlightLimit   int              `json:"inFlightLimit"`
	FlushMs         float64          `json:"flushMs"`
	BundleLatencyMs float64          `json:"bundleLatencyMs"`
	Totals          OverviewTotals   `json:"totals"`
	History         []OverviewPoint  `json:"history"`
	Buckets         int              `json:"buckets"`
	Bridges         []OverviewBridge `json:"bridges"`
	// Publish are the publish relay's slots (left out when it watches
	// none).
	Publish []OverviewSlot `json:"publish,omitempty"`
}

// OverviewSlot is one slot of the publish relay as this bridge sees it:
// its state (reading, standby, not-ready, down, starting), its lag, and
// whether the lag passed its bound.
type OverviewSlot struct {
	Database   string  `json:"database"`
	Slot       string  `json:"slot"`
	State      string  `json:"state"`
	Relayed    uint64  `json:"relayed"`
	LagBytes   int64   `json:"lagBytes"`
	LagSeconds float64 `json:"lagSeconds"`
	Behind     bool    `json:"behind"`
}

// OverviewSpool is the spool's state: records waiting, bytes of its files,
// and whether it can take more.
type OverviewSpool struct {
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
	Healthy bool  `json:"healthy"`
}

// OverviewTotals are this bridge's counters since it started.
type OverviewTotals struct {
	Pushed   uint64 `json:"pushed"`
	Consumed uint64 `json:"consumed"`
	Commits  uint64 `json:"commits"`
	Segments uint64 `json:"segments"`
}

// OverviewPoint is one interval between two samples, at its end.
type OverviewPoint struct {
	Time              time.Time `json:"time"`
	PushedPerSecond   float64   `json:"pushedPerSecond"`
	ConsumedPerSecond float64   `json:"consumedPerSecond"`
	SegmentsPerCommit float64   `json:"segmentsPerCommit"`
	FlushMs           float64   `json:"flushMs"`
}

// OverviewBridge is one live bridge and how many buckets it owns.
type OverviewBridge struct {
	ID      string `json:"id"`
	Self    bool   `json:"self"`
	Buckets int    `json:"buckets"`
}

// Millis is d in milliseconds, as the answers' *Ms fields carry it.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// EncodeBridgeOverview renders o: times in UTC, lists never null, and a figure
// JSON cannot carry (NaN, an infinity) as 0.
func EncodeBridgeOverview(o BridgeOverview) []byte {
	o.Time = o.Time.UTC()
	o.FlushMs, o.BundleLatencyMs = finite(o.FlushMs), finite(o.BundleLatencyMs)
	hist := make([]OverviewPoint, len(o.History))
	for i, p := range o.History {
		hist[i] = OverviewPoint{Time: p.Time.UTC(), PushedPerSecond: finite(p.PushedPerSecond), ConsumedPerSecond: finite(p.ConsumedPerSecond),
			SegmentsPerCommit: finite(p.SegmentsPerCommit), FlushMs: finite(p.FlushMs)}
	}
	o.History = hist
	if o.Bridges == nil {
		o.Bridges = []OverviewBridge{}
	}
	out, _ := json.Marshal(o) // strings, times, finite numbers: nothing in it fails to encode
	return out
}

func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}
