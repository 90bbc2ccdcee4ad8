package cursors

import (
	"context"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
)

// Store is the consumer state in PostgreSQL the engine needs (pgwire.DB
// satisfies it). Durable consumers are consumer groups: the name is the
// group, a partition's ack floor is the group's cursor there.
type Store interface {
	// PutConsumer stores a definition. action "create" fails with
	// ErrConsumerExists when one exists with another config, "update"
	// with ErrConsumerMissing when none exists, "" creates or updates.
	// A create seeds the partitions' floors from c.Start.
	PutConsumer(ctx context.Context, c StoredConsumer, action string) (StoredConsumer, error)
	// GetConsumer fails with ErrConsumerMissing.
	GetConsumer(ctx context.Context, tenant tenancy.TenantID, queue, name string) (StoredConsumer, error)
	ListConsumers(ctx context.Context, tenant tenancy.TenantID, queue string) ([]StoredConsumer, error)
	// DeleteConsumer removes the definition and its cursor rows; false
	// when there was none.
	DeleteConsumer(ctx context.Context, tenant tenancy.TenantID, queue, name string) (bool, error)
	// TouchConsumers records that the consumers were active now.
	TouchConsumers(ctx context.Context, ids []int64) error
	// IdleConsumers lists up to limit consumers of every tenant that may
	// be deleted for inactivity (ephemeral, or a number above zero at
	// thresholdKey in their config) and were last recorded active longer
	// ago than their threshold plus grace.
	IdleConsumers(ctx context.Context, grace time.Duration, thresholdKey string, limit int) ([]StoredConsumer, error)
	// ConsumerPartitions is every partition of the consumer's queue with
	// the consumer's state on it, ascending id (ErrConsumerMissing).
	ConsumerPartitions(ctx context.Context, consumerID int64) ([]PartitionState, error)
	// ReadAfter reads messages after the ranges' offsets, many partitions
	// in one statement; out[i] answers ranges[i].
	ReadAfter(ctx context.Context, ranges []ReadRange) ([]ReadRun, error)
	// CommitAcks stores the acknowledgement state of many (consumer,
	// partition) pairs in one statement and one commit, locking in the one
	// lock order; it writes the dead letters the updates carry.
	CommitAcks(ctx context.Context, ups []AckUpdate) error
	// PartitionStats is a queue and its partitions with their counts
	// (stream info, and the partition a by_start_sequence filter pins).
	PartitionStats(ctx context.Context, tenant tenancy.TenantID, queue string) (pgwire.QueueInfo, []pgwire.PartitionStat, bool, error)
}

// Deliver policies as the Store spells them (ConsumerStart.Policy).
var storePolicies = map[DeliverPolicy]string{
	DeliverAll: pgwire.JSDeliverAll, DeliverNew: pgwire.JSDeliverNew, DeliverByStartTime: pgwire.JSDeliverByStartTime,
	DeliverLast: pgwire.JSDeliverLast, DeliverLastPerSubject: pgwire.JSDeliverLastPerSubject,
	DeliverByStartSequence: pgwire.JSDeliverByStartSequence,
}

// The Store's records are pgwire's: the engine reads and writes them as
// pgwire.DB answers and takes them.
type (
	// ConsumerStart is where a created consumer's floors start.
	ConsumerStart = pgwire.JSStart
	// StoredConsumer is a consumer definition as stored; its Config is the
	// engine's encoding of ConsumerConfig (JSON).
	StoredConsumer = pgwire.JSConsumer
	// PartitionState is one partition of a consumer's queue and the
	// consumer's state on it.
	PartitionState = pgwire.JSPartition
	// ReadRange asks for messages of a partition after an offset.
	ReadRange = pgwire.JSRange
	// ReadRun answers a ReadRange: offsets in (After, Next] not among its
	// messages are gone (tombstoned, or removed by retention).
	ReadRun = pgwire.JSRun
	// StoredMsg is one message read back, with its segment's time.
	StoredMsg = pgwire.Message
	// AckUpdate is the acknowledgement state of one (consumer, partition)
	// pair: the whole state above the floor, plus dead letters to write.
	AckUpdate = pgwire.JSAckUpdate
	// DeadLetter is a message that goes to the queue's dead letters.
	DeadLetter = pgwire.JSDeadLetter
)

// Deliverer sends to a tenant's NATS inboxes with any reply (*leaf.Set
// satisfies it: one leaf connection per tenant account, so a delivery
// never lands in another tenant's account).
type Deliverer interface {
	// Publish sends one message; header is a full NATS header block or nil.
	Publish(tenant tenancy.TenantID, subject, reply string, header, body []byte) error
	// Hold and Release bracket a batch of Publish calls of a tenant: what
	// is published between them may be written out together at Release
	// rather than a few messages at a time. Every Hold has its Release.
	Hold(tenant tenancy.TenantID)
	Release(tenant tenancy.TenantID)
	// Interested reports whether some subscription of the tenant's
	// account matches subject.
	Interested(tenant tenancy.TenantID, subject string) bool
	// OnInterestLost registers fn, called when the last interest in a
	// subject of a tenant's account goes; fn must not block.
	OnInterestLost(fn func(tenant tenancy.TenantID, subject string))
}
