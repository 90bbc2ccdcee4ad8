package admin

import (
	"github.com/queenbridge/queenbridge/jsonapi"
	"time"
)

// The answers of Queen's queue resource routes (docs/admin.md, "Queues"). Not a hot
// path: rendered by encoding/json from structs whose field order is the
// wire's.

// SixCounts are the six message counts of Queen's answers. Failed is always
// 0, as Queen sends it.
type SixCounts struct {
	Total      int64 `json:"total"`
	Pending    int64 `json:"pending"`
	Processing int64 `json:"processing"`
	Completed  int64 `json:"completed"`
	Failed     int64 `json:"failed"`
	DeadLetter int64 `json:"deadLetter"`
}

// ThreeCounts are the three counts of a queue in a list.
type ThreeCounts struct {
	Total      int64 `json:"total"`
	Pending    int64 `json:"pending"`
	Processing int64 `json:"processing"`
}

// StatTime is a timestamp as the answers write it: RFC 3339 in UTC, null when
// zero.
type StatTime time.Time

// MarshalJSON writes t, or null.
func (t StatTime) MarshalJSON() ([]byte, error) {
	if time.Time(t).IsZero() {
		return []byte("null"), nil
	}
	out := append([]byte{'"'}, time.Time(t).UTC().AppendFormat(nil, time.RFC3339Nano)...)
	return append(out, '"'), nil
}

// QueueSummary is a queue in GET /api/v1/resources/queues and
// /api/v1/status/queues.
type QueueSummary struct {
	ID         string      `json:"id"`
	Name       string      `json:"name"`
	Namespace  string      `json:"namespace"`
	Task       string      `json:"task"`
	CreatedAt  StatTime    `json:"createdAt"`
	Partitions int64       `json:"partitions"`
	Messages   ThreeCounts `json:"messages"`
}

// QueueList is GET /api/v1/resources/queues' answer.
type QueueList struct {
	Queues []QueueSummary `json:"queues"`
}

// PartitionDetail is a partition in GET /api/v1/resources/queues/:queue.
type PartitionDetail struct {
	ID            string    `json:"id"`
	Name          string    `json:"name"`
	CreatedAt     StatTime  `json:"createdAt"`
	Stats         SixCounts `json:"stats"`
	OldestMessage StatTime  `json:"oldestMessage"`
	NewestMessage StatTime  `json:"newestMessage"`
}

// QueueDetail is GET /api/v1/resources/queues/:queue's answer.
type QueueDetail struct {
	ID         string            `json:"id"`
	Name       string            `json:"name"`
	Namespace  string            `json:"namespace"`
	Task       string            `json:"task"`
	CreatedAt  StatTime          `json:"createdAt"`
	Partitions []PartitionDetail `json:"partitions"`
	Totals     SixCounts         `json:"totals"`
}

// QueueDeleted is DELETE /api/v1/resources/queues/:queue's answer.
type QueueDeleted struct {
	Deleted bool   `json:"deleted"`
	Queue   string `json:"queue"`
	Existed bool   `json:"existed"`
}

// TwoCounts are the counts of a namespace or a task.
type TwoCounts struct {
	Total   int64 `json:"total"`
	Pending int64 `json:"pending"`
}

// NamespaceSummary is one namespace of GET /api/v1/resources/namespaces.
type NamespaceSummary struct {
	Namespace  string    `json:"namespace"`
	Queues     int64     `json:"queues"`
	Partitions int64     `json:"partitions"`
	Messages   TwoCounts `json:"messages"`
}

// NamespaceList is GET /api/v1/resources/namespaces' answer.
type NamespaceList struct {
	Namespaces []NamespaceSummary `json:"namespaces"`
}

// TaskSummary is one task of GET /api/v1/resources/tasks.
type TaskSummary struct {
	Task       string    `json:"task"`
	Queues     int64     `json:"queues"`
	Partitions int64     `json:"partitions"`
	Messages   TwoCounts `json:"messages"`
}

// TaskList is GET /api/v1/resources/tasks' answer.
type TaskList struct {
	Tasks []TaskSummary `json:"tasks"`
}

// LagSpread is an average, a median, a minimum and a maximum.
type LagSpread struct {
	Avg    float64 `json:"avg"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// OverviewLag is how far consumers are behind: in seconds and in messages.
type OverviewLag struct {
	Time   LagSpread `json:"time"`
	Offset LagSpread `json:"offset"`
}

// Throughput are messages per second in and out.
type Throughput struct {
	IngestedPerSecond  float64 `json:"ingestedPerSecond"`
	ProcessedPerSecond float64 `json:"processedPerSecond"`
}

// Overview is GET /api/v1/resources/overview's answer.
type Overview struct {
	Queues     int64       `json:"queues"`
	Partitions int64       `json:"partitions"`
	Namespaces int64       `json:"namespaces"`
	Tasks      int64       `json:"tasks"`
	Messages   SixCounts   `json:"messages"`
	Lag        OverviewLag `json:"lag"`
	Throughput Throughput  `json:"throughput"`
	Timestamp  StatTime    `json:"timestamp"`
	StatsAge   int64       `json:"statsAge"`
}

// NotAQueenRoute is the answer to the routes Queen's clients call and Queen
// does not serve (docs/admin.md, "Client methods with no Queen route").
func NotAQueenRoute() []byte {
	return jsonapi.AppendError(nil, "not a Queen route")
}

// StatsRefreshed is POST /api/v1/stats/refresh's answer: counts are
// computed when they are read, so there is nothing to refresh.
func StatsRefreshed() []byte { return []byte(`{"success":true}`) }
