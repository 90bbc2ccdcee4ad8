package admin

import (
	"encoding/json"
	"github.com/queenbridge/queenbridge/jsonapi"
	"time"
)

// The dashboard's status answers (docs/admin.md, "Status and maintenance") and their query parameters.
// Every number in them is (opt): the top-level keys stay so that the
// dashboard renders.

// StatusRequest is GET /api/v1/status' query: the time range (default the
// last hour) and the queues it covers.
type StatusRequest struct {
	From, To               time.Time
	Queue, Namespace, Task string
}

// ParseStatusQuery reads GET /api/v1/status' query parameters; now is the
// default end.
func ParseStatusQuery(get func(string) string, now time.Time) (StatusRequest, error) {
	r := StatusRequest{To: now, Queue: get("queue"), Namespace: get("namespace"), Task: get("task")}
	for _, p := range []struct {
		name string
		to   *time.Time
	}{{"from", &r.From}, {"to", &r.To}} {
		if v := get(p.name); v != "" {
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return r, jsonapi.Badf("%s must be an RFC 3339 time, got %q", p.name, v)
			}
			*p.to = t
		}
	}
	if r.From.IsZero() {
		r.From = r.To.Add(-time.Hour)
	}
	if r.From.After(r.To) {
		return r, jsonapi.Badf("from must not be after to")
	}
	return r, nil
}

// BucketMinutes is the width of the throughput buckets Queen uses for a
// range: 1, 5, 15, 60 or 360 minutes.
func BucketMinutes(span time.Duration) int {
	switch {
	case span <= 2*time.Hour:
		return 1
	case span <= 12*time.Hour:
		return 5
	case span <= 48*time.Hour:
		return 15
	case span <= 14*24*time.Hour:
		return 60
	}
	return 360
}

// QueueStatsRequest is GET /api/v1/status/queues' query.
type QueueStatsRequest struct {
	Namespace, Task string
	Limit, Offset   int
}

// ParseQueueStatsQuery reads GET /api/v1/status/queues' query parameters:
// limit 100 and offset 0 unless given.
func ParseQueueStatsQuery(get func(string) string) (QueueStatsRequest, error) {
	r := QueueStatsRequest{Namespace: get("namespace"), Task: get("task"), Limit: 100}
	err := jsonapi.ParseQueryInts(get,
		jsonapi.IntParam{Name: "limit", Bits: 32, Set: func(n int64) { r.Limit = int(n) }},
		jsonapi.IntParam{Name: "offset", Bits: 32, Set: func(n int64) { r.Offset = int(n) }})
	if err == nil && (r.Limit < 1 || r.Offset < 0) {
		err = jsonapi.Badf("limit must be at least 1 and offset at least 0")
	}
	return r, err
}

// StatusTimeRange is a status answer's range.
type StatusTimeRange struct {
	From StatTime `json:"from"`
	To   StatTime `json:"to"`
}

// StatusQueue is a queue of GET /api/v1/status.
type StatusQueue struct {
	ID            string `json:"id"`
	Name          string `json:"name"`
	Namespace     string `json:"namespace"`
	Task          string `json:"task"`
	Partitions    int64  `json:"partitions"`
	TotalConsumed int64  `json:"totalConsumed"`
}

// StatusRequests counts requests by kind.
type StatusRequests struct {
	Push int64 `json:"push"`
	Pop  int64 `json:"pop"`
	Ack  int64 `json:"ack"`
}

// StatusMessages are the status' message counts.
type StatusMessages struct {
	SixCounts
	Requests        StatusRequests  `json:"requests"`
	BatchEfficiency json.RawMessage `json:"batchEfficiency"`
}

// StatusLeases are the live leases.
type StatusLeases struct {
	Active               int64 `json:"active"`
	PartitionsWithLeases int64 `json:"partitionsWithLeases"`
	TotalBatchSize       int64 `json:"totalBatchSize"`
	TotalAcked           int64 `json:"totalAcked"`
}

// StatusErrorCount is one error text and how often it occurs.
type StatusErrorCount struct {
	Error string `json:"error"`
	Count int64  `json:"count"`
}

// StatusDeadLetters sums up the dead letters.
type StatusDeadLetters struct {
	TotalMessages      int64              `json:"totalMessages"`
	AffectedPartitions int64              `json:"affectedPartitions"`
	TopErrors          []StatusErrorCount `json:"topErrors"`
}

// StatusErrors counts errors.
type StatusErrors struct {
	DBErrors    int64 `json:"dbErrors"`
	AckFailed   int64 `json:"ackFailed"`
	DLQMessages int64 `json:"dlqMessages"`
}

// Status is GET /api/v1/status' answer.
type Status struct {
	TimeRange       StatusTimeRange   `json:"timeRange"`
	BucketMinutes   int               `json:"bucketMinutes"`
	PointCount      int               `json:"pointCount"`
	Throughput      []json.RawMessage `json:"throughput"`
	Queues          []StatusQueue     `json:"queues"`
	Messages        StatusMessages    `json:"messages"`
	Leases          StatusLeases      `json:"leases"`
	DeadLetterQueue StatusDeadLetters `json:"deadLetterQueue"`
	Workers         []json.RawMessage `json:"workers"`
	Errors          StatusErrors      `json:"errors"`
	StatsAge        int64             `json:"statsAge"`
}

// PageBounds is a page's bounds.
type PageBounds struct {
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
}

// QueueStatsPage is GET /api/v1/status/queues' answer.
type QueueStatsPage struct {
	Queues     []QueueSummary `json:"queues"`
	Pagination PageBounds     `json:"pagination"`
}

// QueueConfig is a queue's options as the status detail names them; null
// where neither the queue nor the bridge has a value.
type QueueConfig struct {
	LeaseTime       json.RawMessage `json:"leaseTime"`
	RetryLimit      json.RawMessage `json:"retryLimit"`
	RetryDelay      json.RawMessage `json:"retryDelay"`
	TTL             json.RawMessage `json:"ttl"`
	MaxQueueSize    json.RawMessage `json:"maxQueueSize"`
	DeadLetterQueue json.RawMessage `json:"deadLetterQueue"`
}

// StatusQueueInfo is the queue of GET /api/v1/status/queues/:queue.
type StatusQueueInfo struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Task      string          `json:"task"`
	Priority  json.RawMessage `json:"priority"`
	CreatedAt StatTime        `json:"createdAt"`
	Config    QueueConfig     `json:"config"`
}

// CursorStats is what a partition's reference cursor consumed.
type CursorStats struct {
	TotalConsumed   int64 `json:"totalConsumed"`
	BatchesConsumed int64 `json:"batchesConsumed"`
}

// StatusPartition is a partition of GET /api/v1/status/queues/:queue.
type StatusPartition struct {
	ID            string      `json:"id"`
	Name          string      `json:"name"`
	CreatedAt     StatTime    `json:"createdAt"`
	Messages      SixCounts   `json:"messages"`
	Stats         SixCounts   `json:"stats"`
	Cursor        CursorStats `json:"cursor"`
	LastActivity  StatTime    `json:"lastActivity"`
	OldestMessage StatTime    `json:"oldestMessage"`
	NewestMessage StatTime    `json:"newestMessage"`
}

// StatusTotals are the detail's totals: the six counts under messages and
// flat.
type StatusTotals struct {
	Messages SixCounts `json:"messages"`
	SixCounts
}

// StatusQueueDetail is GET /api/v1/status/queues/:queue's answer.
type StatusQueueDetail struct {
	Queue      StatusQueueInfo   `json:"queue"`
	Partitions []StatusPartition `json:"partitions"`
	Totals     StatusTotals      `json:"totals"`
}
