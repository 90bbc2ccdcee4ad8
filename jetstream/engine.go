package jetstream

import (
	"context"
	"time"

	"github.com/queenbridge/queenbridge/cursors"
	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// Engine is the JetStream consumers' engine as the API calls it: the
// consumers' definitions, their live state (parked pulls, what is delivered
// and pending) and the acknowledgements; *cursors.JSEngine is the one the
// bridge wires. The API converts the wire JSON to and from the plain types
// below and maps the typed errors to JetStream's error codes; the engine
// never sees JSON.
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

// The engine's errors, configuration refusals and Go types are the
// consumer room's (cursors): the API converts the wire JSON to and from
// them and maps the errors to JetStream's codes.
var (
	ErrConsumerNotFound = cursors.ErrConsumerNotFound // 404/10014
	ErrConsumerExists   = cursors.ErrConsumerExists   // 400/10148
	ErrConsumerMissing  = cursors.ErrConsumerMissing  // 400/10149
	ErrStreamNotFound   = cursors.ErrStreamNotFound   // 404/10059
	// ErrTooManyConsumers: the stream's consumer limit is reached (400/10026).
	ErrTooManyConsumers = cursors.ErrTooManyConsumers
)

type (
	ConfigError    = cursors.ConfigError
	DeliverPolicy  = cursors.DeliverPolicy
	AckPolicy      = cursors.AckPolicy
	ConsumerConfig = cursors.ConsumerConfig
	SequenceInfo   = cursors.SequenceInfo
	ConsumerInfo   = cursors.ConsumerInfo
	StreamState    = cursors.StreamState
	PullRequest    = cursors.PullRequest
	AckRef         = cursors.AckRef
	AckKind        = cursors.AckKind
)

// The deliver policies, ack policies and ack kinds.
const (
	DeliverAll             = cursors.DeliverAll
	DeliverLast            = cursors.DeliverLast
	DeliverNew             = cursors.DeliverNew
	DeliverByStartSequence = cursors.DeliverByStartSequence
	DeliverByStartTime     = cursors.DeliverByStartTime
	DeliverLastPerSubject  = cursors.DeliverLastPerSubject

	AckExplicit = cursors.AckExplicit
	AckAll      = cursors.AckAll
	AckNone     = cursors.AckNone

	AckAck      = cursors.AckAck
	AckNak      = cursors.AckNak
	AckProgress = cursors.AckProgress
	AckTerm     = cursors.AckTerm
)
