package jetstream

import (
	"context"
	"errors"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// Engine is the JetStream consumers' engine as the API calls it: the
// consumers' definitions, their live state (parked pulls, what is delivered
// and pending) and the acknowledgements. The API converts the wire JSON to
// and from the plain types below and maps the typed errors to JetStream's
// error codes; the engine never sees JSON.
type Engine interface {
	// CreateConsumer creates or updates a consumer of stream. action is
	// "create" (ErrConsumerExists when one exists with another config),
	// "update" (ErrConsumerMissing when none exists) or "" (either).
	CreateConsumer(ctx context.Context, tenant tenancy.TenantID, stream string, cfg ConsumerConfig, action string) (ConsumerInfo, error)
	// ConsumerInfo is a consumer's definition and state (ErrConsumerNotFound).
	ConsumerInfo(ctx context.Context, tenant tenancy.TenantID, stream, name string) (ConsumerInfo, error)
	// DeleteConsumer removes a consumer and its state (ErrConsumerNotFound).
	DeleteConsumer(ctx context.Context, tenant tenancy.TenantID, stream, name string) error
	// Consumers are the tenant's consumers of stream, ordered by name.
	Consumers(ctx context.Context, tenant tenancy.TenantID, stream string) ([]ConsumerInfo, error)
	// StreamState is what the stream holds for the tenant.
	StreamState(ctx context.Context, tenant tenancy.TenantID, stream string) (StreamState, error)
	// Pull parks req for the consumer or answers it; messages and status
	// messages go to inbox. ErrConsumerNotFound: the API answers 503.
	Pull(tenant tenancy.TenantID, stream, name string, req PullRequest, inbox string) error
	// Ack applies an acknowledgement; reply != "": an empty message is
	// published to reply once the acknowledgement is stored.
	Ack(tenant tenancy.TenantID, ack AckRef, kind AckKind, delay time.Duration, reason string, reply string)
}

// The engine's errors that the API maps to JetStream's codes.
var (
	ErrConsumerNotFound = errors.New("consumer not found")      // 404/10014
	ErrConsumerExists   = errors.New("consumer already exists") // 400/10148
	ErrConsumerMissing  = errors.New("consumer does not exist") // 400/10149
	ErrStreamNotFound   = errors.New("stream not found")        // 404/10059
	// ErrTooManyConsumers: the stream's consumer limit is reached (400/10026).
	ErrTooManyConsumers = errors.New("maximum consumers limit reached")
)

// ConfigError is a consumer configuration the engine refuses: Code is
// nats-server's error code (errors.json), Description its text.
type ConfigError struct {
	Code        int
	Description string
}

func (e *ConfigError) Error() string { return e.Description }

// DeliverPolicy is where a consumer starts (JetStream's deliver_policy).
type DeliverPolicy int

// The deliver policies; the zero value is JetStream's default, all.
const (
	DeliverAll DeliverPolicy = iota
	DeliverLast
	DeliverNew
	DeliverByStartSequence
	DeliverByStartTime
	DeliverLastPerSubject
)

// AckPolicy is how a consumer's messages are acknowledged.
type AckPolicy int

// The ack policies; the zero value is a pull consumer's default, explicit.
const (
	AckExplicit AckPolicy = iota
	AckAll
	AckNone
)

// ConsumerConfig is a pull consumer's definition, JetStream's fields with
// JetStream's meanings. What the bridge does not serve (push delivery, flow
// control, rate limits, sampling, replay at the original pace, priority
// groups) has no field: the API refuses it before the engine is called.
type ConsumerConfig struct {
	Name        string // the consumer's name; Durable's when durable
	Durable     string // "" for an ephemeral consumer
	Description string

	DeliverPolicy DeliverPolicy
	OptStartSeq   uint64    // DeliverByStartSequence: the partition offset
	OptStartTime  time.Time // DeliverByStartTime

	AckPolicy     AckPolicy
	AckWait       time.Duration // 0: the default (30s)
	MaxDeliver    int           // -1 or 0: unlimited
	BackOff       []time.Duration
	MaxAckPending int // 0: the default (1000); -1 unlimited
	MaxWaiting    int // 0: the default (512)

	FilterSubject  string   // one filter, as sent
	FilterSubjects []string // several filters, as sent

	HeadersOnly        bool
	MaxRequestBatch    int
	MaxRequestExpires  time.Duration
	MaxRequestMaxBytes int
	InactiveThreshold  time.Duration

	Replicas      int  // echoed
	MemoryStorage bool // echoed
	Metadata      map[string]string
}

// SequenceInfo is a consumer's position: the consumer sequence and the
// stream sequence (a partition offset), and when it last moved.
type SequenceInfo struct {
	Consumer uint64
	Stream   uint64
	Last     time.Time // zero: never
}

// ConsumerInfo is a consumer's definition and state.
type ConsumerInfo struct {
	Stream         string
	Name           string
	Created        time.Time
	Config         ConsumerConfig
	Delivered      SequenceInfo
	AckFloor       SequenceInfo
	NumAckPending  int
	NumRedelivered int
	NumWaiting     int
	NumPending     uint64
	TimeStamp      time.Time // when the state was gathered
}

// StreamState is what a stream holds. Sequences are partition offsets,
// so FirstSeq and LastSeq are the lowest and highest over the partitions.
type StreamState struct {
	Created   time.Time // the queue's creation; zero when it has none yet
	Messages  uint64
	Bytes     uint64
	FirstSeq  uint64
	FirstTime time.Time
	LastSeq   uint64
	LastTime  time.Time
	Consumers int
}

// PullRequest is a parsed MSG.NEXT request (ParsePullRequest).
type PullRequest struct {
	Batch     int           // at least 1
	Expires   time.Duration // 0: none
	MaxBytes  int           // 0: no limit
	NoWait    bool
	Heartbeat time.Duration // 0: none; at most Expires/2
}

// AckRef names a delivered message: the parsed ack subject (ParseAckSubject).
type AckRef struct {
	PartitionID int64
	Stream      string
	Consumer    string
	Delivered   uint64 // the delivery count
	Offset      int64  // the stream sequence: the partition offset
	ConsumerSeq uint64
	Timestamp   int64  // Unix ns of the message
	Pending     uint64 // what was left when it was delivered
	Epoch       uint64 // the delivery's lease epoch
}

// AckKind is what an acknowledgement asks (ParseAckBody).
type AckKind int

// The acknowledgements a client sends.
const (
	AckAck      AckKind = iota // empty, +ACK, +OK
	AckNak                     // -NAK, maybe with a delay
	AckProgress                // +WPI
	AckTerm                    // +TERM, maybe with a reason
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
