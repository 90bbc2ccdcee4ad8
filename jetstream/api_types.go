package jetstream

import (
	"time"
)

// The JSON of the JetStream API the bridge serves, as nats-server spells it
// (server/jetstream_api.go, consumer.go, stream.go): field names, integer
// nanosecond durations, RFC 3339 times. Every answer carries its "type",
// which the nats CLI checks against jsm.go's schemas. These are not on a
// hot path: encoding/json does the work.

// The "type" of each answer (server/jetstream_api.go).
const (
	typeAccountInfo    = "io.nats.jetstream.api.v1.account_info_response"
	typeStreamInfo     = "io.nats.jetstream.api.v1.stream_info_response"
	typeStreamList     = "io.nats.jetstream.api.v1.stream_list_response"
	typeStreamNames    = "io.nats.jetstream.api.v1.stream_names_response"
	typeConsumerCreate = "io.nats.jetstream.api.v1.consumer_create_response"
	typeConsumerInfo   = "io.nats.jetstream.api.v1.consumer_info_response"
	typeConsumerDelete = "io.nats.jetstream.api.v1.consumer_delete_response"
	typeConsumerNames  = "io.nats.jetstream.api.v1.consumer_names_response"
	typeConsumerList   = "io.nats.jetstream.api.v1.consumer_list_response"
	// typeError answers a subject the bridge does not serve at all.
	typeError = "io.nats.jetstream.api.v1.error_response"
)

// apiError is JetStream's API error: an HTTP-like code, nats-server's
// error code (errors.json) and its description.
type apiError struct {
	Code        int    `json:"code"`
	ErrCode     int    `json:"err_code,omitempty"`
	Description string `json:"description,omitempty"`
}

func (e *apiError) Error() string { return e.Description }

// apiResponse is what every answer starts with.
type apiResponse struct {
	Type  string    `json:"type"`
	Error *apiError `json:"error,omitempty"`
}

// apiPaged is the paging part of the list and names answers.
type apiPaged struct {
	Total  int `json:"total"`
	Offset int `json:"offset"`
	Limit  int `json:"limit"`
}

// apiPagedRequest is the body of a list or names request (or none).
type apiPagedRequest struct {
	Offset  int    `json:"offset"`
	Subject string `json:"subject,omitempty"` // STREAM.NAMES/LIST: streams holding this subject
}

// streamConfigJSON is a declared stream as JetStream describes one: the
// stream is declared by the bridge's configuration, never created through
// the API, so the limits say "none" and deletes and purges are denied.
type streamConfigJSON struct {
	Name              string        `json:"name"`
	Subjects          []string      `json:"subjects"`
	Retention         string        `json:"retention"`
	MaxConsumers      int           `json:"max_consumers"`
	MaxMsgs           int64         `json:"max_msgs"`
	MaxBytes          int64         `json:"max_bytes"`
	MaxAge            time.Duration `json:"max_age"`
	MaxMsgsPerSubject int64         `json:"max_msgs_per_subject"`
	MaxMsgSize        int32         `json:"max_msg_size"`
	Discard           string        `json:"discard"`
	Storage           string        `json:"storage"`
	Replicas          int           `json:"num_replicas"`
	Duplicates        time.Duration `json:"duplicate_window,omitempty"`
	AllowDirect       bool          `json:"allow_direct"`
	DenyDelete        bool          `json:"deny_delete"`
	DenyPurge         bool          `json:"deny_purge"`
}

// streamStateJSON is a stream's state.
type streamStateJSON struct {
	Msgs      uint64    `json:"messages"`
	Bytes     uint64    `json:"bytes"`
	FirstSeq  uint64    `json:"first_seq"`
	FirstTime time.Time `json:"first_ts"`
	LastSeq   uint64    `json:"last_seq"`
	LastTime  time.Time `json:"last_ts"`
	Consumers int       `json:"consumer_count"`
}

// streamInfoJSON is a stream's description and state.
type streamInfoJSON struct {
	Config  streamConfigJSON `json:"config"`
	Created time.Time        `json:"created"`
	State   streamStateJSON  `json:"state"`
	TS      time.Time        `json:"ts"`
}

type streamInfoResponse struct {
	apiResponse
	*streamInfoJSON
}

type streamListResponse struct {
	apiResponse
	apiPaged
	Streams []*streamInfoJSON `json:"streams"`
}

type streamNamesResponse struct {
	apiResponse
	apiPaged
	Streams []string `json:"streams"`
}

// consumerConfigJSON is a consumer's configuration, every field nats-server
// knows (so that decoding can refuse what the bridge does not serve rather
// than drop it). The unsupported fields are only ever zero in an answer.
type consumerConfigJSON struct {
	Durable         string            `json:"durable_name,omitempty"`
	Name            string            `json:"name,omitempty"`
	Description     string            `json:"description,omitempty"`
	DeliverPolicy   string            `json:"deliver_policy"`
	OptStartSeq     uint64            `json:"opt_start_seq,omitempty"`
	OptStartTime    *time.Time        `json:"opt_start_time,omitempty"`
	AckPolicy       string            `json:"ack_policy"`
	AckWait         time.Duration     `json:"ack_wait,omitempty"`
	MaxDeliver      int               `json:"max_deliver,omitempty"`
	BackOff         []time.Duration   `json:"backoff,omitempty"`
	FilterSubject   string            `json:"filter_subject,omitempty"`
	FilterSubjects  []string          `json:"filter_subjects,omitempty"`
	ReplayPolicy    string            `json:"replay_policy"`
	RateLimit       uint64            `json:"rate_limit_bps,omitempty"`
	SampleFrequency string            `json:"sample_freq,omitempty"`
	MaxWaiting      int               `json:"max_waiting,omitempty"`
	MaxAckPending   int               `json:"max_ack_pending,omitempty"`
	FlowControl     bool              `json:"flow_control,omitempty"`
	HeadersOnly     bool              `json:"headers_only,omitempty"`
	MaxRequestBatch int               `json:"max_batch,omitempty"`
	MaxExpires      time.Duration     `json:"max_expires,omitempty"`
	MaxBytes        int               `json:"max_bytes,omitempty"`
	DeliverSubject  string            `json:"deliver_subject,omitempty"`
	DeliverGroup    string            `json:"deliver_group,omitempty"`
	Heartbeat       time.Duration     `json:"idle_heartbeat,omitempty"`
	Inactive        time.Duration     `json:"inactive_threshold,omitempty"`
	Replicas        int               `json:"num_replicas"`
	MemoryStorage   bool              `json:"mem_storage,omitempty"`
	Direct          bool              `json:"direct,omitempty"`
	Sourcing        bool              `json:"sourcing,omitempty"`
	Metadata        map[string]string `json:"metadata,omitempty"`
	PauseUntil      *time.Time        `json:"pause_until,omitempty"`
	PriorityGroups  []string          `json:"priority_groups,omitempty"`
	PriorityPolicy  string            `json:"priority_policy,omitempty"`
	PinnedTTL       time.Duration     `json:"priority_timeout,omitempty"`
}

// consumerCreateRequest is the body of CONSUMER.CREATE and
// CONSUMER.DURABLE.CREATE.
type consumerCreateRequest struct {
	Stream   string              `json:"stream_name"`
	Config   *consumerConfigJSON `json:"config"`
	Action   string              `json:"action"`
	Pedantic bool                `json:"pedantic,omitempty"`
}

// sequenceInfoJSON is a consumer's position.
type sequenceInfoJSON struct {
	Consumer uint64     `json:"consumer_seq"`
	Stream   uint64     `json:"stream_seq"`
	Last     *time.Time `json:"last_active,omitempty"`
}

// consumerInfoJSON is a consumer's configuration and state.
type consumerInfoJSON struct {
	Stream         string              `json:"stream_name"`
	Name           string              `json:"name"`
	Created        time.Time           `json:"created"`
	Config         *consumerConfigJSON `json:"config,omitempty"`
	Delivered      sequenceInfoJSON    `json:"delivered"`
	AckFloor       sequenceInfoJSON    `json:"ack_floor"`
	NumAckPending  int                 `json:"num_ack_pending"`
	NumRedelivered int                 `json:"num_redelivered"`
	NumWaiting     int                 `json:"num_waiting"`
	NumPending     uint64              `json:"num_pending"`
	TS             time.Time           `json:"ts"`
}

type consumerInfoResponse struct {
	apiResponse
	*consumerInfoJSON
}

type consumerDeleteResponse struct {
	apiResponse
	Success bool `json:"success,omitempty"`
}

type consumerNamesResponse struct {
	apiResponse
	apiPaged
	Consumers []string `json:"consumers"`
}

type consumerListResponse struct {
	apiResponse
	apiPaged
	Consumers []*consumerInfoJSON `json:"consumers"`
}

// accountInfoResponse is $JS.API.INFO's answer: what the tenant's account
// holds on the declared streams, with no limits (-1) since the bridge
// imposes none of JetStream's.
type accountInfoResponse struct {
	apiResponse
	Memory    uint64            `json:"memory"`
	Store     uint64            `json:"storage"`
	Streams   int               `json:"streams"`
	Consumers int               `json:"consumers"`
	Limits    accountLimitsJSON `json:"limits"`
	API       apiStatsJSON      `json:"api"`
}

type accountLimitsJSON struct {
	MaxMemory    int64 `json:"max_memory"`
	MaxStore     int64 `json:"max_storage"`
	MaxStreams   int   `json:"max_streams"`
	MaxConsumers int   `json:"max_consumers"`
}

type apiStatsJSON struct {
	Total  uint64 `json:"total"`
	Errors uint64 `json:"errors"`
}

// pullRequestJSON is a MSG.NEXT request (server JSApiConsumerGetNextRequest
// with its PriorityGroup fields, which the bridge refuses).
type pullRequestJSON struct {
	Expires       time.Duration `json:"expires,omitempty"`
	Batch         int           `json:"batch,omitempty"`
	MaxBytes      int           `json:"max_bytes,omitempty"`
	NoWait        bool          `json:"no_wait,omitempty"`
	Heartbeat     time.Duration `json:"idle_heartbeat,omitempty"`
	Group         string        `json:"group,omitempty"`
	MinPending    int64         `json:"min_pending,omitempty"`
	MinAckPending int64         `json:"min_ack_pending,omitempty"`
	ID            string        `json:"id,omitempty"`
	Priority      int           `json:"priority,omitempty"`
}

// nakOptions is the body after -NAK when it is an object.
type nakOptions struct {
	Delay time.Duration `json:"delay,omitempty"`
}
