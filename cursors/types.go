package cursors

import (
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// DeliverPolicy is where a new consumer starts (JetStream's deliver_policy).
type DeliverPolicy int

// The deliver policies. The Store seeds each partition's ack floor from it
// when the consumer is created.
const (
	DeliverAll             DeliverPolicy = iota // every retained message
	DeliverLast                                 // the newest partition's last message
	DeliverNew                                  // messages stored after the create
	DeliverByStartSequence                      // OptStartSeq: an offset, on the one partition the filter pins
	DeliverByStartTime                          // OptStartTime: messages of segments committed at or after it
	DeliverLastPerSubject                       // each partition's last message
)

// AckPolicy is how deliveries are acknowledged (JetStream's ack_policy).
type AckPolicy int

// The ack policies.
const (
	// AckExplicit: each message is acknowledged on its own; the floor
	// moves over the acknowledged run.
	AckExplicit AckPolicy = iota
	// AckAll: an ack of an offset acknowledges every offset up to it in
	// its partition (Queen's cursor = max rule).
	AckAll
	// AckNone: a message is acknowledged by its delivery.
	AckNone
)

// ConsumerConfig is a pull consumer's definition, JetStream's fields with
// durations as time.Duration. Zero values take JetStream's defaults
// (withDefaults).
type ConsumerConfig struct {
	Name        string // the consumer's name; Durable when empty
	Durable     string // "" for an ephemeral consumer
	Description string

	DeliverPolicy DeliverPolicy
	OptStartSeq   uint64    // DeliverByStartSequence
	OptStartTime  time.Time // DeliverByStartTime

	AckPolicy     AckPolicy
	AckWait       time.Duration   // default 30 s
	MaxDeliver    int             // -1 or 0: unbounded; else deliveries before the dead letters
	BackOff       []time.Duration // ack deadlines by delivery count (the last repeats); overrides AckWait
	MaxAckPending int             // default 1000; -1 unbounded

	FilterSubject  string   // one filter, as sent
	FilterSubjects []string // several filters, as sent; none of either: every message

	MaxWaiting         int           // parked pull requests at once; default 512
	MaxRequestBatch    int           // 0: any
	MaxRequestExpires  time.Duration // 0: any
	MaxRequestMaxBytes int           // 0: any
	HeadersOnly        bool          // deliver the headers and Nats-Msg-Size, no body

	// InactiveThreshold: a consumer with no pull and no ack for this long is
	// deleted. Ephemeral consumers default to 5 s, durable ones to never.
	InactiveThreshold time.Duration

	Replicas      int
	MemoryStorage bool
	Metadata      map[string]string
}

// ConsumerName is the name the consumer is addressed by.
func (c *ConsumerConfig) ConsumerName() string {
	if c.Name != "" {
		return c.Name
	}
	return c.Durable
}

// SequenceInfo is a consumer sequence with its stream sequence (here a
// partition offset), and when it happened.
type SequenceInfo struct {
	Consumer uint64
	Stream   uint64
	Last     time.Time // zero: never
}

// ConsumerInfo is what consumer info answers.
type ConsumerInfo struct {
	Stream  string
	Name    string
	Created time.Time
	Config  ConsumerConfig
	// Delivered is the last delivery this bridge made (zero when the
	// consumer is not live here); AckFloor's Stream is the lowest ack floor
	// over the partitions.
	Delivered      SequenceInfo
	AckFloor       SequenceInfo
	NumAckPending  int
	NumRedelivered int
	NumWaiting     int
	NumPending     uint64    // messages above what was delivered, over every partition
	TimeStamp      time.Time // when the state was gathered
}

// StreamState is a stream's figures for stream info. Sequences are
// partition offsets: FirstSeq is the lowest first retained offset of any
// partition, LastSeq the highest last offset.
type StreamState struct {
	Created   time.Time // the queue's creation; zero when the Store does not tell
	Messages  uint64
	Bytes     uint64
	FirstSeq  uint64
	FirstTime time.Time
	LastSeq   uint64
	LastTime  time.Time
	Consumers int
}

// PullRequest is one MSG.NEXT request, as the API room parsed it.
type PullRequest struct {
	Batch     int           // 0 means 1
	MaxBytes  int           // 0: no bound
	Expires   time.Duration // 0: none
	NoWait    bool          // answer 404 rather than wait
	Heartbeat time.Duration // idle_heartbeat; 0: none
}

// AckKind is what an ack body asks.
type AckKind int

// The ack kinds.
const (
	AckAck      AckKind = iota // empty, +ACK, +OK
	AckNak                     // -NAK, with an optional delay
	AckProgress                // +WPI: the ack deadline starts again
	AckTerm                    // +TERM [reason]: to the dead letters, never again
)

func (k AckKind) String() string {
	switch k {
	case AckAck:
		return "+ACK"
	case AckNak:
		return "-NAK"
	case AckProgress:
		return "+WPI"
	case AckTerm:
		return "+TERM"
	}
	return "unknown"
}

// filters are the consumer's filters, FilterSubject and FilterSubjects
// together.
func (c *ConsumerConfig) filters() []string {
	if c.FilterSubject == "" {
		return c.FilterSubjects
	}
	return append([]string{c.FilterSubject}, c.FilterSubjects...)
}

// AckRef is an ack subject, parsed:
// $JS.ACK._.<partition id>.<stream>.<consumer>.<delivered>.<offset>.<consumer seq>.<ts ns>.<pending>.<epoch>.
type AckRef struct {
	PartitionID int64
	Stream      string
	Consumer    string
	Delivered   uint64 // the delivery count of the acknowledged delivery
	Offset      int64
	ConsumerSeq uint64
	Timestamp   int64  // Unix ns of the message's segment
	Pending     uint64 // what was left when it was delivered
	Epoch       uint64 // the delivering engine's generation
}

// consumerKey names a consumer: (tenant, stream, name).
type consumerKey struct {
	tenant tenancy.TenantID
	stream string
	name   string
}

// queueKey names a stream's queue.
type queueKey struct {
	tenant tenancy.TenantID
	stream string
}
