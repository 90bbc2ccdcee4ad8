package jsonapi

import (
	"math"
	"strconv"
	"time"
)

// The web console's own routes (docs/console.md): this bridge's live
// figures, a queue's partitions and consumer groups, and the requeue of
// dead letters. Times are RFC 3339 in UTC.

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
	return EncodeResource(o)
}

func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}

// QueueConsumers is GET /api/v1/resources/queues/{queue}/consumers'
// answer: the queue's partitions by name, and its consumer groups by name,
// each with every partition of the queue, by name (Popped false: one it has
// no cursor on yet).
type QueueConsumers struct {
	Queue      string
	Partitions []ConsumerPartition
	Groups     []ConsumerGroup
}

// ConsumerPartition is one partition of a queue: its high-water mark, its
// last write (zero: nothing written) and the messages stored.
type ConsumerPartition struct {
	ID         int64
	Name       string
	LastOffset int64
	LastWrite  time.Time
	Messages   int64
}

// ConsumerGroup is one group and its cursors.
type ConsumerGroup struct {
	Name       string
	Partitions []GroupCursor
}

// GroupCursor is a group's cursor on one partition, the messages stored
// after it, and its live lease (Leased false: none). Without Popped, the
// group has not popped the partition yet, and Cursor is where its first pop
// would start.
type GroupCursor struct {
	Partition   string
	PartitionID int64
	Cursor      int64
	Lag         int64
	Popped      bool
	Lease       [16]byte
	Leased      bool
	Expires     time.Time
	BatchSize   int64 // what the live lease delivered; 0 without one
}

type consumerPartitionJSON struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	LastOffset int64    `json:"lastOffset"`
	LastWrite  StatTime `json:"lastWrite"`
	Messages   int64    `json:"messages"`
}

type groupCursorJSON struct {
	Partition      string      `json:"partition"`
	PartitionID    string      `json:"partitionId"`
	Cursor         int64       `json:"cursor"`
	Lag            int64       `json:"lag"`
	Popped         bool        `json:"popped"`
	LeaseID        groupString `json:"leaseId"`
	LeaseExpiresAt StatTime    `json:"leaseExpiresAt"`
	BatchSize      int64       `json:"batchSize"`
}

type consumerGroupJSON struct {
	Name       string            `json:"name"`
	Partitions []groupCursorJSON `json:"partitions"`
}

// EncodeQueueConsumers renders q: partition ids as strings (as in push
// results), a lease's id and expiry null without a live lease.
func EncodeQueueConsumers(q QueueConsumers) []byte {
	out := struct {
		Queue      string                  `json:"queue"`
		Partitions []consumerPartitionJSON `json:"partitions"`
		Groups     []consumerGroupJSON     `json:"groups"`
	}{Queue: q.Queue, Partitions: make([]consumerPartitionJSON, len(q.Partitions)), Groups: make([]consumerGroupJSON, len(q.Groups))}
	for i, p := range q.Partitions {
		out.Partitions[i] = consumerPartitionJSON{ID: strconv.FormatInt(p.ID, 10), Name: p.Name, LastOffset: p.LastOffset,
			LastWrite: StatTime(p.LastWrite), Messages: p.Messages}
	}
	for i, g := range q.Groups {
		cs := make([]groupCursorJSON, len(g.Partitions))
		for j, c := range g.Partitions {
			cs[j] = groupCursorJSON{Partition: c.Partition, PartitionID: strconv.FormatInt(c.PartitionID, 10), Cursor: c.Cursor, Lag: c.Lag,
				Popped: c.Popped, BatchSize: c.BatchSize}
			if c.Leased {
				cs[j].LeaseID, cs[j].LeaseExpiresAt = groupString(AppendUUID(nil, c.Lease)), StatTime(c.Expires)
			}
		}
		out.Groups[i] = consumerGroupJSON{Name: g.Name, Partitions: cs}
	}
	return EncodeResource(out)
}
