package admin

import (
	"encoding/json"
	"github.com/queenbridge/queenbridge/jsonapi"
	"math"
	"strconv"
	"time"
)

// Queen's consumer-group routes (docs/admin-groups.md): the query parameters and
// bodies they take, and their answers, in Queen's field names. Queen's
// clients hand these answers to their callers verbatim and read no field,
// so the shapes follow Queen's stored procedures; times are UTC with
// milliseconds, as Queen writes them.

// groupTimeFormat is Queen's time format in admin answers.
const groupTimeFormat = "2006-01-02T15:04:05.000Z"

// groupTime is t in Queen's format, or JSON null when t is zero.
type groupTime time.Time

func (t groupTime) MarshalJSON() ([]byte, error) {
	if time.Time(t).IsZero() {
		return []byte("null"), nil
	}
	return strconv.AppendQuote(nil, time.Time(t).UTC().Format(groupTimeFormat)), nil
}

// groupString is s, or JSON null when s is "".
type groupString string

func (s groupString) MarshalJSON() ([]byte, error) {
	if s == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(s))
}

// GroupSummary is one (group, queue) of GET /api/v1/consumer-groups.
type GroupSummary struct {
	Name, Queue       string
	Members           int // partitions with a cursor for the group
	PartitionsWithLag int
	TotalLag          int64 // messages after the cursors
	MaxTimeLag        int64 // seconds: the oldest message after a cursor
	State             string
	// SubscriptionMode in Queen's spelling: "new", "timestamp", or "" (null)
	// for all.
	SubscriptionMode      string
	SubscriptionAt        time.Time // zero: null
	SubscriptionCreatedAt time.Time // zero: null
}

type groupSummaryJSON struct {
	Name                  string      `json:"name"`
	QueueName             string      `json:"queueName"`
	Topics                []string    `json:"topics"`
	Members               int         `json:"members"`
	PartitionsWithLag     int         `json:"partitionsWithLag"`
	TotalLag              int64       `json:"totalLag"`
	MaxTimeLag            int64       `json:"maxTimeLag"`
	State                 string      `json:"state"`
	SubscriptionMode      groupString `json:"subscriptionMode"`
	SubscriptionTimestamp groupTime   `json:"subscriptionTimestamp"`
	SubscriptionCreatedAt groupTime   `json:"subscriptionCreatedAt"`
}

// GroupList is GET /api/v1/consumer-groups' answer: an array, one element
// per (group, queue), in the order given.
func GroupList(gs []GroupSummary) []byte {
	out := make([]groupSummaryJSON, len(gs))
	for i, g := range gs {
		out[i] = groupSummaryJSON{Name: g.Name, QueueName: g.Queue, Topics: []string{g.Queue}, Members: g.Members,
			PartitionsWithLag: g.PartitionsWithLag, TotalLag: g.TotalLag, MaxTimeLag: g.MaxTimeLag, State: g.State,
			SubscriptionMode: groupString(g.SubscriptionMode), SubscriptionTimestamp: groupTime(g.SubscriptionAt),
			SubscriptionCreatedAt: groupTime(g.SubscriptionCreatedAt)}
	}
	return groupJSON(out)
}

// GroupPartition is one partition of GET /api/v1/consumer-groups/:group.
type GroupPartition struct {
	Partition      string
	WorkerID       string    // the live lease's id; "": null
	LastConsumedAt time.Time // zero: null
	TotalConsumed  int64
	OffsetLag      int64
	TimeLagSeconds int64
	LeaseActive    bool
}

// GroupQueue is a queue of the group's detail, with its partitions.
type GroupQueue struct {
	Queue      string
	Partitions []GroupPartition
}

type groupPartitionJSON struct {
	Partition      string      `json:"partition"`
	WorkerID       groupString `json:"workerId"`
	LastConsumedAt groupTime   `json:"lastConsumedAt"`
	TotalConsumed  int64       `json:"totalConsumed"`
	OffsetLag      int64       `json:"offsetLag"`
	TimeLagSeconds int64       `json:"timeLagSeconds"`
	LeaseActive    bool        `json:"leaseActive"`
}

// GroupDetail is GET /api/v1/consumer-groups/:group's answer:
// {"<queue>": {"partitions": [...]}}; {} for a group with no cursor.
func GroupDetail(qs []GroupQueue) []byte {
	out := make(map[string]map[string][]groupPartitionJSON, len(qs))
	for _, q := range qs {
		ps := make([]groupPartitionJSON, len(q.Partitions))
		for i, p := range q.Partitions {
			ps[i] = groupPartitionJSON{Partition: p.Partition, WorkerID: groupString(p.WorkerID), LastConsumedAt: groupTime(p.LastConsumedAt),
				TotalConsumed: p.TotalConsumed, OffsetLag: p.OffsetLag, TimeLagSeconds: p.TimeLagSeconds, LeaseActive: p.LeaseActive}
		}
		out[q.Queue] = map[string][]groupPartitionJSON{"partitions": ps}
	}
	return groupJSON(out)
}

// LaggingPartition is one element of GET /api/v1/consumer-groups/lagging.
type LaggingPartition struct {
	Group, Queue, Partition string
	PartitionID             int64
	WorkerID                string // "": null
	OffsetLag               int64
	TimeLagSeconds          int64
	OldestUnconsumedAt      time.Time
	LastConsumedAt          time.Time // zero: null
}

type laggingJSON struct {
	ConsumerGroup      string      `json:"consumer_group"`
	QueueName          string      `json:"queue_name"`
	PartitionName      string      `json:"partition_name"`
	PartitionID        string      `json:"partition_id"`
	WorkerID           groupString `json:"worker_id"`
	OffsetLag          int64       `json:"offset_lag"`
	TimeLagSeconds     int64       `json:"time_lag_seconds"`
	LagHours           float64     `json:"lag_hours"`
	OldestUnconsumedAt groupTime   `json:"oldest_unconsumed_at"`
	LastConsumedAt     groupTime   `json:"last_consumed_at"`
}

// LaggingList is the lagging route's answer, Queen's snake_case array in
// the order given; lag_hours is the time lag in hours, to two decimals.
func LaggingList(ls []LaggingPartition) []byte {
	out := make([]laggingJSON, len(ls))
	for i, l := range ls {
		out[i] = laggingJSON{ConsumerGroup: l.Group, QueueName: l.Queue, PartitionName: l.Partition,
			PartitionID: strconv.FormatInt(l.PartitionID, 10), WorkerID: groupString(l.WorkerID), OffsetLag: l.OffsetLag,
			TimeLagSeconds: l.TimeLagSeconds, LagHours: math.Round(float64(l.TimeLagSeconds)/36) / 100,
			OldestUnconsumedAt: groupTime(l.OldestUnconsumedAt), LastConsumedAt: groupTime(l.LastConsumedAt)}
	}
	return groupJSON(out)
}

// DefaultMinLagSeconds is the lagging route's minLagSeconds when none is
// given (Queen's server default; its JS client sends 60).
const DefaultMinLagSeconds = 3600

// ParseMinLagSeconds reads the lagging route's minLagSeconds.
func ParseMinLagSeconds(get func(string) string) (int64, error) {
	n := int64(DefaultMinLagSeconds)
	err := jsonapi.ParseQueryInts(get, jsonapi.IntParam{Name: "minLagSeconds", Bits: 64, Set: func(v int64) { n = v }})
	return n, err
}

// DeleteMetadata reads a group delete's deleteMetadata: absent (or empty,
// which Queen's server cannot tell from absent) is true, as on Queen;
// otherwise only "true" and "1" are true.
func DeleteMetadata(get func(string) string) bool {
	v := get("deleteMetadata")
	return v == "" || v == "true" || v == "1"
}

// GroupDeleted is a group delete's answer: {"success","consumerGroup",
// ["queueName",] "deletedPartitions","metadataDeleted"}; queueName only
// for the delete of one queue (queue != "").
func GroupDeleted(group, queue string, deleted int, metadata bool) []byte {
	type answer struct {
		Success           bool   `json:"success"`
		ConsumerGroup     string `json:"consumerGroup"`
		QueueName         string `json:"queueName,omitempty"`
		DeletedPartitions int    `json:"deletedPartitions"`
		MetadataDeleted   bool   `json:"metadataDeleted"`
	}
	return groupJSON(answer{true, group, queue, deleted, metadata})
}

// SeekTarget is what a seek body asks: the end, or a time.
type SeekTarget struct {
	ToEnd bool
	At    time.Time
}

// DecodeSeek reads a seek body: {"toEnd": true} or {"timestamp": "<RFC
// 3339>"}, toEnd winning, as on Queen. Neither is Queen's 400; a timestamp
// that is not RFC 3339 is a 400 naming it (Queen: 500).
func DecodeSeek(body []byte) (SeekTarget, error) {
	var req struct {
		ToEnd     *bool   `json:"toEnd"`
		Timestamp *string `json:"timestamp"`
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			return SeekTarget{}, jsonapi.Badf("seek body: %s", err.Error())
		}
	}
	if req.ToEnd != nil && *req.ToEnd {
		return SeekTarget{ToEnd: true}, nil
	}
	if req.Timestamp == nil {
		return SeekTarget{}, jsonapi.Badf("Must specify either 'toEnd': true or 'timestamp'")
	}
	at, err := time.Parse(time.RFC3339Nano, *req.Timestamp)
	if err != nil {
		return SeekTarget{}, jsonapi.Badf("timestamp must be an RFC 3339 time, got %q", *req.Timestamp)
	}
	return SeekTarget{At: at}, nil
}

// Seeked is a seek's answer: {"success","consumerGroup","queueName",
// "seekToEnd","targetTimestamp" (null when to the end),
// "partitionsUpdated"}.
func Seeked(group, queue string, to SeekTarget, updated int) []byte {
	type answer struct {
		Success           bool      `json:"success"`
		ConsumerGroup     string    `json:"consumerGroup"`
		QueueName         string    `json:"queueName"`
		SeekToEnd         bool      `json:"seekToEnd"`
		TargetTimestamp   groupTime `json:"targetTimestamp"`
		PartitionsUpdated int       `json:"partitionsUpdated"`
	}
	return groupJSON(answer{true, group, queue, to.ToEnd, groupTime(to.At), updated})
}

// PartitionSeeked is the partition seek's answer: {"success",
// "consumerGroup","queueName","partitionName","updated","cursorMovedTo"}
// (the offset the cursor now stands at).
func PartitionSeeked(group, queue, partition string, cursor int64) []byte {
	type answer struct {
		Success       bool   `json:"success"`
		ConsumerGroup string `json:"consumerGroup"`
		QueueName     string `json:"queueName"`
		PartitionName string `json:"partitionName"`
		Updated       bool   `json:"updated"`
		CursorMovedTo int64  `json:"cursorMovedTo"`
	}
	return groupJSON(answer{true, group, queue, partition, true, cursor})
}

// PartitionNotFound is the partition seek's 404 body, Queen's
// {"success":false,"error":"Partition not found"}.
func PartitionNotFound() []byte {
	return []byte(`{"success":false,"error":"Partition not found"}`)
}

// DecodeSubscription reads a subscription update's body,
// {"subscriptionTimestamp": "<RFC 3339>"}: the text as sent and its time.
func DecodeSubscription(body []byte) (sent string, at time.Time, err error) {
	var req struct {
		Timestamp *string `json:"subscriptionTimestamp"`
	}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &req); err != nil {
			return "", time.Time{}, jsonapi.Badf("subscription body: %s", err.Error())
		}
	}
	if req.Timestamp == nil {
		return "", time.Time{}, jsonapi.Badf("Missing subscriptionTimestamp in request body")
	}
	at, err = time.Parse(time.RFC3339Nano, *req.Timestamp)
	if err != nil {
		return "", time.Time{}, jsonapi.Badf("subscriptionTimestamp must be an RFC 3339 time, got %q", *req.Timestamp)
	}
	return *req.Timestamp, at, nil
}

// SubscriptionUpdated is a subscription update's answer: {"success",
// "consumerGroup","newTimestamp" (as sent),"rowsUpdated"}.
func SubscriptionUpdated(group, sent string, rows int64) []byte {
	type answer struct {
		Success       bool   `json:"success"`
		ConsumerGroup string `json:"consumerGroup"`
		NewTimestamp  string `json:"newTimestamp"`
		RowsUpdated   int64  `json:"rowsUpdated"`
	}
	return groupJSON(answer{true, group, sent, rows})
}

// groupJSON encodes an answer made of strings, numbers, booleans and the
// types above, which cannot fail to encode.
func groupJSON(v any) []byte {
	out, _ := json.Marshal(v)
	return out
}
