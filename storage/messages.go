package storage

import (
	"encoding/json"
	"time"
)

// The rows Queen's message routes read (docs/admin-messages.md): a
// partition with its groups' cursor rows, a message found by its
// transactionId, the pages of a message list.

// QueueMode is the consumer group of Queen's queue mode: consumers compete
// for one cursor per partition.
const QueueMode = "__QUEUE_MODE__"

// GroupState is a consumer group's cursor row on a partition.
type GroupState struct {
	Group       string
	Cursor      int64
	DeliveredTo int64
	// LeaseExpires is the live lease's expiry; zero when none is live.
	LeaseExpires time.Time
}

// MessagePartition is a partition as the admin message routes read it.
type MessagePartition struct {
	ID                          int64
	Queue, Partition            string
	Namespace, Task             string
	Encrypted                   bool
	Other                       map[string]json.RawMessage // the queue's other options, as sent
	Last                        int64
	Groups                      []GroupState // by group name, __QUEUE_MODE__ among them
	Tombstones, DeadLetterCount int64        // tombstoned offsets; offsets with dead letters
}

// DeadLetterEntry is one group's dead letter of a message.
type DeadLetterEntry struct {
	Group      string
	Error      string
	RetryCount int
	FailedAt   time.Time
}

// FoundMessage is one stored message found by its transactionId.
type FoundMessage struct {
	Partition   MessagePartition
	Message     Message
	DeadLetters []DeadLetterEntry // newest first
}

// MessageFilter selects a tenant's partitions for a message list; "" is
// any.
type MessageFilter struct {
	Queue, Partition, Namespace, Task string
}

// OffsetRange is what a message list takes of one partition: the offsets
// (Lo, Hi], newest first, and how many of them are enough (Need).
type OffsetRange struct {
	PartitionID, Lo, Hi, Need int64
}

// ListedMessage is one message of a list: stored, not tombstoned.
type ListedMessage struct {
	PartitionID int64
	Message
	// DeadLettered: some group wrote it to its dead letters.
	DeadLettered bool
}
