package cursors

import (
	"context"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
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
	DeliverAll: "all", DeliverNew: "new", DeliverByStartTime: "by_start_time", DeliverLast: "last",
	DeliverLastPerSubject: "last_per_subject", DeliverByStartSequence: "by_start_sequence",
}

// ConsumerStart is where a created consumer's floors start.
type ConsumerStart struct {
	Policy      string    // all, new, by_start_time, last, last_per_subject, by_start_sequence
	Time        time.Time // by_start_time
	PartitionID int64     // by_start_sequence: the partition the filter pins
	Offset      int64     // by_start_sequence: the first offset to deliver
}

// StoredConsumer is a consumer definition as stored.
type StoredConsumer struct {
	ID      int64
	Tenant  tenancy.TenantID
	Queue   string // the stream
	Name    string
	Durable bool
	// Config is the engine's encoding of ConsumerConfig (JSON).
	Config                  []byte
	Start                   ConsumerStart
	CreatedAt, LastActiveAt time.Time
}

// PartitionState is one partition of a consumer's queue and the
// consumer's state on it.
type PartitionState struct {
	ID   int64
	Name string
	// Last is the partition's last offset (0: none); First the first
	// offset retention left (Last+1 when none is left).
	Last, First int64
	Floor       int64 // every offset ≤ Floor is acknowledged
	Seeded      bool  // the consumer has a cursor row here
	Acked       []int64
	Deliveries  map[int64]int // of offsets delivered more than once
}

// ReadRange asks for up to Limit messages of a partition after offset
// After (MaxBytes of payload, 0: no bound).
type ReadRange struct {
	PartitionID int64
	After       int64
	Limit       int
	MaxBytes    int64
}

// ReadRun answers a ReadRange: its messages in offset order, and Next, the
// offset read up to (offsets in (After, Next] not among the messages are
// gone: tombstoned or removed by retention).
type ReadRun struct {
	PartitionID int64
	Messages    []StoredMsg
	Next        int64
	Full        bool // MaxBytes stopped the run
}

// StoredMsg is one message read back, with its segment's time.
type StoredMsg struct {
	Offset    int64
	Frame     segment.Frame
	CreatedAt time.Time
}

// AckUpdate is the acknowledgement state of one (consumer, partition)
// pair: the whole state above the floor (so a retried commit is
// idempotent), plus dead letters to write once.
type AckUpdate struct {
	ConsumerID  int64
	PartitionID int64
	Floor       int64
	Acked       []int64       // ascending, all above Floor
	Deliveries  map[int64]int // offsets above Floor delivered more than once
	Dead        []DeadLetter
}

// DeadLetter is a message that goes to the queue's dead letters: max
// deliveries reached, or terminated (+TERM).
type DeadLetter struct {
	Offset        int64
	TransactionID string
	Error         string // why: the +TERM reason, or max_deliver
	Deliveries    int
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
