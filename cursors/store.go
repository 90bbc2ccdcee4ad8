package cursors

import (
	"context"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// Store is the consumer state in PostgreSQL the engine needs (pgwire.DB
// satisfies it through an adapter in the front door's wiring). Durable
// consumers are consumer groups: the name is the group, a partition's ack
// floor is the group's cursor there.
type Store interface {
	// PutConsumer stores a definition. action "create" fails with
	// ErrConsumerExists when one exists with another config, "update"
	// with ErrConsumerMissing when none exists, "" creates or updates.
	// A create seeds the partitions' floors from the deliver policy.
	PutConsumer(ctx context.Context, c StoredConsumer, action string) (StoredConsumer, error)
	// GetConsumer fails with ErrConsumerNotFound.
	GetConsumer(ctx context.Context, tenant tenancy.TenantID, queue, name string) (StoredConsumer, error)
	ListConsumers(ctx context.Context, tenant tenancy.TenantID, queue string) ([]StoredConsumer, error)
	// DeleteConsumer removes the definition and its cursor rows; false
	// when there was none.
	DeleteConsumer(ctx context.Context, tenant tenancy.TenantID, queue, name string) (bool, error)
	// TouchConsumers records that the consumers were active now.
	TouchConsumers(ctx context.Context, ids []int64) error
	// ConsumerPartitions is every partition of the consumer's queue with
	// the consumer's state on it.
	ConsumerPartitions(ctx context.Context, consumerID int64) ([]PartitionState, error)
	// ReadAfter reads messages after the given offsets, many partitions in
	// one statement, in (partition, offset) order.
	ReadAfter(ctx context.Context, ranges []ReadRange) ([]StoredMsg, error)
	// CommitAcks stores the acknowledgement state of many (consumer,
	// partition) pairs in one statement and one commit, locking in the one
	// lock order; it writes the dead letters the updates carry.
	CommitAcks(ctx context.Context, ups []AckUpdate) error
}

// StreamStore is what StreamState reads; a Store that also implements it
// gives stream info real figures (without it the counts are zero).
type StreamStore interface {
	StreamState(ctx context.Context, tenant tenancy.TenantID, queue string) (StreamState, error)
}

// StoredConsumer is a consumer definition as stored.
type StoredConsumer struct {
	ID         int64
	Tenant     tenancy.TenantID
	Queue      string // the stream
	Name       string
	Config     ConsumerConfig
	Created    time.Time
	LastActive time.Time
	// StartPartition is the partition the filter pins, for
	// DeliverByStartSequence; "" otherwise.
	StartPartition string
}

// PartitionState is one partition of a consumer's queue and the
// consumer's state on it.
type PartitionState struct {
	PartitionID int64
	Partition   string
	Floor       int64           // every offset ≤ Floor is acknowledged
	Acked       []int64         // acknowledged offsets above Floor
	Counts      map[int64]int32 // deliveries of offsets delivered more than once
	First       int64           // first retained offset (0: none)
	Last        int64           // last offset (0: none)
}

// ReadRange asks for up to Limit messages of a partition after offset After.
type ReadRange struct {
	PartitionID int64
	After       int64
	Limit       int
}

// StoredMsg is one message read back.
type StoredMsg struct {
	PartitionID int64
	Offset      int64
	Time        time.Time // its segment's commit time
	Subject     string    // as published; "" when the frame kept none
	Header      []byte    // the NATS header block as published; nil when none
	Flags       uint8     // segment frame flags (encryption, base64)
	Payload     []byte    // as stored
}

// AckUpdate is the acknowledgement state of one (consumer, partition)
// pair: the whole state above the floor (so a retried commit is
// idempotent), plus dead letters to write once.
type AckUpdate struct {
	ConsumerID  int64
	Group       string // the consumer's name
	PartitionID int64
	Floor       int64
	Acked       []int64         // ascending, all above Floor
	Counts      map[int64]int32 // offsets above Floor delivered more than once
	Dead        []DeadLetter
}

// DeadLetter is a message that goes to the queue's dead letters: max
// deliveries reached, or terminated (+TERM).
type DeadLetter struct {
	Offset int64
	Reason string
}

// Deliverer sends to NATS inboxes with any reply (*leaf.Conn satisfies it).
type Deliverer interface {
	// Publish sends one message; header is a full NATS header block or nil.
	Publish(subject, reply string, header, body []byte) error
	// Interested reports whether some subscription matches subject.
	Interested(subject string) bool
	// OnInterestLost registers fn, called when the last interest in a
	// literal subject goes; fn must not block.
	OnInterestLost(fn func(subject string))
}
