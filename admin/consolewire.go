package admin

import (
	"github.com/queenbridge/queenbridge/jsonapi"
	"strconv"
	"time"
)

// The web console's queue page (console.go): a queue's partitions and its
// consumer groups' cursors.

// QueueConsumers is GET /api/v1/resources/queues/{queue}/consumers'
// answer: the queue's partitions by name, and its consumer groups by name,
// each with every partition of the queue, by name (Popped false: one it has
// no cursor on yet).
type QueueConsumers struct {
	Queue      string
	Partitions []ConsumerPartition
	Groups     []ConsumerGroup
	// Streams are the streaming queries whose source is the queue, by
	// name (docs/streams.md).
	Streams []StreamQueryInfo
}

// StreamQueryInfo is a streaming query of a queue and its state's size.
type StreamQueryInfo struct {
	ID                     [16]byte
	Name, Sink, ConfigHash string
	Partitions, Rows       int64 // source partitions with state; state rows
	Bytes                  int64 // the state values' size as stored
	Registered, LastWrite  time.Time
}

type streamQueryJSON struct {
	QueryID    string   `json:"queryId"`
	Name       string   `json:"name"`
	Sink       *string  `json:"sinkQueue"`
	ConfigHash string   `json:"configHash"`
	Partitions int64    `json:"statePartitions"`
	Rows       int64    `json:"stateRows"`
	Bytes      int64    `json:"stateBytes"`
	Registered StatTime `json:"registeredAt"`
	LastWrite  StatTime `json:"lastStateWrite"`
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
		Streams    []streamQueryJSON       `json:"streams"`
	}{Queue: q.Queue, Partitions: make([]consumerPartitionJSON, len(q.Partitions)), Groups: make([]consumerGroupJSON, len(q.Groups)),
		Streams: make([]streamQueryJSON, len(q.Streams))}
	for i, s := range q.Streams {
		out.Streams[i] = streamQueryJSON{QueryID: string(jsonapi.AppendUUID(nil, s.ID)), Name: s.Name, ConfigHash: s.ConfigHash, Partitions: s.Partitions,
			Rows: s.Rows, Bytes: s.Bytes, Registered: StatTime(s.Registered), LastWrite: StatTime(s.LastWrite)}
		if s.Sink != "" {
			out.Streams[i].Sink = &q.Streams[i].Sink
		}
	}
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
				cs[j].LeaseID, cs[j].LeaseExpiresAt = groupString(jsonapi.AppendUUID(nil, c.Lease)), StatTime(c.Expires)
			}
		}
		out.Groups[i] = consumerGroupJSON{Name: g.Name, Partitions: cs}
	}
	return jsonapi.AppendResource(nil, out)
}
