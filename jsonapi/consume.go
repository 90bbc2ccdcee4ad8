package jsonapi

import (
	"strconv"
	"time"
)

// QueueModeGroup is the consumer group of Queen's queue mode.
const QueueModeGroup = "__QUEUE_MODE__"

// PopRequest is a pop: the query parameters of GET /api/v1/pop/queue/:queue
// (and .../partition/:partition), or the JSON body of <prefix>.v1.pop,
// where the path parameters are the fields queue and partition.
type PopRequest struct {
	Queue            string `json:"queue"`
	Partition        string `json:"partition"`
	Batch            int    `json:"batch"`
	Wait             bool   `json:"wait"`
	TimeoutMs        int    `json:"timeout"`
	ConsumerGroup    string `json:"consumerGroup"`
	AutoAck          bool   `json:"autoAck"`
	SubscriptionMode string `json:"subscriptionMode"`
	SubscriptionFrom string `json:"subscriptionFrom"`
	Partitions       int    `json:"partitions"`
	// RequestID names this pop for a later cancel (<prefix>.v1.pop.cancel,
	// NATS only); unique per pop. "": the pop cannot be cancelled.
	RequestID string `json:"requestId"`
	// ExpiresMs is how long the requester waits for the answer, from when
	// it sent the pop (NATS only): a parked pop answers before that, less
	// the answer's trip (RequesterWait). 0: the requester did not say.
	ExpiresMs int64 `json:"expiresMs"`

	// From is SubscriptionFrom as a time (Validate); zero without one, and
	// for "now", which Validate makes SubscriptionMode "new".
	From time.Time `json:"-"`
}

// Bounds of a pop.
const (
	MaxPopBatch      = 10000
	MaxPopPartitions = 100
	DefaultPopWaitMs = 30000
)

// ParsePopQuery reads a pop's query parameters; bad numbers and booleans
// are errors naming the parameter.
func ParsePopQuery(get func(string) string) (PopRequest, error) {
	r := PopRequest{ConsumerGroup: get("consumerGroup"), SubscriptionMode: get("subscriptionMode"), SubscriptionFrom: get("subscriptionFrom")}
	if err := ParseQueryInts(get,
		IntParam{"batch", 32, func(n int64) { r.Batch = int(n) }},
		IntParam{"timeout", 32, func(n int64) { r.TimeoutMs = int(n) }},
		IntParam{"partitions", 32, func(n int64) { r.Partitions = int(n) }}); err != nil {
		return r, err
	}
	for _, p := range []struct {
		name string
		dst  *bool
	}{{"wait", &r.Wait}, {"autoAck", &r.AutoAck}} {
		if v := get(p.name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return r, Badf("%s must be true or false, got %q", p.name, v)
			}
			*p.dst = b
		}
	}
	return r, nil
}

// Validate checks a pop and fills in its defaults: batch 1, timeout 30 s,
// group __QUEUE_MODE__, partitions 1. A subscriptionMode given becomes
// "all" or "new" (SubscriptionMode); an absent one stays "", for the
// consumer's configured default; subscriptionFrom "now" makes it "new".
func (r *PopRequest) Validate() error {
	if err := CheckName("queue", r.Queue, r.Queue != ""); err != nil {
		return err
	}
	if r.Partition != "" {
		if err := CheckName("partition", r.Partition, true); err != nil {
			return err
		}
	}
	if r.ConsumerGroup == "" {
		r.ConsumerGroup = QueueModeGroup
	}
	if err := CheckName("consumerGroup", r.ConsumerGroup, true); err != nil {
		return err
	}
	switch {
	case r.Batch == 0:
		r.Batch = 1
	case r.Batch < 0 || r.Batch > MaxPopBatch:
		return Badf("batch must be 1..%d, got %d", MaxPopBatch, r.Batch)
	}
	switch {
	case r.Partitions == 0:
		r.Partitions = 1
	case r.Partitions < 0 || r.Partitions > MaxPopPartitions:
		return Badf("partitions must be 1..%d, got %d", MaxPopPartitions, r.Partitions)
	}
	switch {
	case r.TimeoutMs == 0:
		r.TimeoutMs = DefaultPopWaitMs
	case r.TimeoutMs < 0 || int64(r.TimeoutMs) > maxWait.Milliseconds():
		return Badf("timeout must be 0..%d ms, got %d", maxWait.Milliseconds(), r.TimeoutMs)
	}
	if r.RequestID != "" {
		if err := CheckName("requestId", r.RequestID, true); err != nil {
			return err
		}
	}
	if r.ExpiresMs < 0 {
		return Badf("expiresMs must be at least 0, got %d", r.ExpiresMs)
	}
	if r.SubscriptionMode != "" {
		r.SubscriptionMode = SubscriptionMode(r.SubscriptionMode)
	}
	switch r.SubscriptionFrom {
	case "":
	case "now":
		// The database's now, as mode new takes it: the bridge's clock may
		// differ from the one that stamps the segments.
		r.SubscriptionMode = "new"
	default:
		t, err := time.Parse(time.RFC3339Nano, r.SubscriptionFrom)
		if err != nil {
			return Badf("subscriptionFrom must be now or an RFC 3339 time, got %q", r.SubscriptionFrom)
		}
		r.From = t
	}
	return nil
}

// answerTrip bounds the margin RequesterWait keeps for the answer's way
// back to the requester.
const answerTrip = 250 * time.Millisecond

// RequesterWait is the longest a pop may park so that its answer reaches a
// requester that waits expires for it: expires less a fifth of it, at most
// answerTrip. 0 when the requester's wait leaves no time to park.
func RequesterWait(expires time.Duration) time.Duration {
	return max(expires-min(expires/5, answerTrip), 0)
}

// SubscriptionMode is what a pop's subscriptionMode means (docs/consumers.md, "subscriptionMode"):
// "new" and Queen's documented alias "new-only" start a new group at the
// end ("new"); every other value, Queen's "all" and "from_beginning" and
// typos alike, starts it at the beginning ("all"). Never an error: Queen
// refuses none, and its clients send values of their own.
func SubscriptionMode(v string) string {
	if v == "new" || v == "new-only" {
		return "new"
	}
	return "all"
}

// PoppedMessage is one message of a pop answer.
type PoppedMessage struct {
	ID            [16]byte
	TransactionID string
	TraceID       string
	Payload       []byte // the JSON as stored (decrypted)
	Encoded       bool   // the payload is the base64 string of a body that was not JSON
	CreatedAt     time.Time
	PartitionID   int64
	Partition     string
}

// poppedFixed is what AppendPopped appends besides the strings and the
// payload: the keys, quotes, a UUID, the longest time and partition id.
var poppedFixed = len(`{"id":"","transactionId":"","traceId":null,"data":,"encoding":"base64","producerSub":null,"createdAt":"",`+
	`"partitionId":"","partition":"","leaseId":"","consumerGroup":""}`) + 36 + len(time.RFC3339Nano) + 20

// PoppedLen is what AppendPopped appends for m (more when a string needs
// escaping), so that an answer's buffer is made once at about its size.
func PoppedLen(m *PoppedMessage, lease, group string) int {
	return poppedFixed + len(m.TransactionID) + len(m.TraceID) + len(m.Payload) + len(m.Partition) + len(lease) + len(group)
}

// AppendPopped appends one message as Queen's clients read it: id,
// transactionId, traceId (null when none), data (the payload exactly as
// pushed), producerSub, createdAt, partitionId (a string, as in push
// results), partition, leaseId ("" with auto-ack), consumerGroup, and
// "encoding":"base64" for a payload stored from a body that was not JSON.
func AppendPopped(out []byte, m *PoppedMessage, lease, group string) []byte {
	out = append(out, `{"id":"`...)
	out = AppendUUID(out, m.ID)
	out = append(out, `","transactionId":`...)
	out = AppendString(out, m.TransactionID)
	out = append(out, `,"traceId":`...)
	if m.TraceID == "" {
		out = append(out, `null`...)
	} else {
		out = AppendString(out, m.TraceID)
	}
	out = append(out, `,"data":`...)
	out = append(out, m.Payload...)
	if m.Encoded {
		out = append(out, `,"encoding":"base64"`...)
	}
	out = append(out, `,"producerSub":null,"createdAt":"`...)
	out = m.CreatedAt.UTC().AppendFormat(out, time.RFC3339Nano)
	out = append(out, `","partitionId":"`...)
	out = strconv.AppendInt(out, m.PartitionID, 10)
	out = append(out, `","partition":`...)
	out = AppendString(out, m.Partition)
	out = append(out, `,"leaseId":`...)
	out = AppendString(out, lease)
	out = append(out, `,"consumerGroup":`...)
	out = AppendString(out, group)
	return append(out, '}')
}

// AckResult is the answer to one acknowledgement.
type AckResult struct {
	TransactionID string
	Error         string // "" on success
	Queue         string
	Partition     string
	LeaseReleased bool
	DLQ           bool
}

// AppendAckResult appends {"index","transactionId","success","error",
// "queueName","partitionName","leaseReleased","dlq"}.
func AppendAckResult(out []byte, index int, r *AckResult) []byte {
	out = append(out, `{"index":`...)
	out = strconv.AppendInt(out, int64(index), 10)
	out = append(out, `,"transactionId":`...)
	out = AppendString(out, r.TransactionID)
	out = append(out, `,"success":`...)
	out = strconv.AppendBool(out, r.Error == "")
	out = append(out, `,"error":`...)
	if r.Error == "" {
		out = append(out, `null`...)
	} else {
		out = AppendString(out, r.Error)
	}
	out = append(out, `,"queueName":`...)
	out = appendStringOrNull(out, r.Queue)
	out = append(out, `,"partitionName":`...)
	out = appendStringOrNull(out, r.Partition)
	out = append(out, `,"leaseReleased":`...)
	out = strconv.AppendBool(out, r.LeaseReleased)
	out = append(out, `,"dlq":`...)
	out = strconv.AppendBool(out, r.DLQ)
	return append(out, '}')
}

func appendStringOrNull(out []byte, s string) []byte {
	if s == "" {
		return append(out, `null`...)
	}
	return AppendString(out, s)
}
