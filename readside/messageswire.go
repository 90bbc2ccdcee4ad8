package readside

import (
	"github.com/queenbridge/queenbridge/jsonapi"
	"strconv"
	"time"
)

// Queen's message routes (docs/admin-messages.md): the list form of GET
// /api/v1/messages, a message's detail and the answer to its delete.

// Message statuses of the list and the detail.
const (
	MessagePending    = "pending"
	MessageProcessing = "processing"
	MessageCompleted  = "completed"
	MessageDeadLetter = "dead_letter"
)

// IsMessageList says whether GET /api/v1/messages with query q asks for
// Queen's message list rather than section 8's offset read: the offset
// read has queue, a from that (if given) is an integer, and none of to,
// ns, namespace, task, status, offset.
func IsMessageList(q map[string][]string) bool {
	if first(q, "queue") == "" {
		return true
	}
	if v := first(q, "from"); v != "" { // empty: left out, as the offset read takes it
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return true
		}
	}
	for _, k := range []string{"to", "ns", "namespace", "task", "status", "offset"} {
		if _, ok := q[k]; ok {
			return true
		}
	}
	return false
}

func first(q map[string][]string, k string) string {
	if v := q[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// MessageListRequest is the list form's query.
type MessageListRequest struct {
	Queue, Partition string
	Namespace        string // Queen's ns parameter (namespace is not read, as on Queen)
	Task             string
	Status           string // "" or one of the Message statuses
	From, To         time.Time
	Limit, Offset    int
}

// Bounds of the list form.
const (
	defaultListLimit = 200
	maxListLimit     = 1000
	maxListOffset    = 100000
)

// ParseMessageListQuery reads the list form's query: from and to as RFC
// 3339 times (default: the hour up to now), to rounded up to the minute;
// limit 200 (at most 1000), offset 0 (at most 100000).
func ParseMessageListQuery(q map[string][]string, now time.Time) (MessageListRequest, error) {
	r := MessageListRequest{Queue: first(q, "queue"), Partition: first(q, "partition"), Namespace: first(q, "ns"),
		Task: first(q, "task"), Status: first(q, "status"), Limit: defaultListLimit}
	switch r.Status {
	case "", MessagePending, MessageProcessing, MessageCompleted, MessageDeadLetter:
	default:
		return r, jsonapi.Badf("status must be pending, processing, completed or dead_letter, got %q", r.Status)
	}
	get := func(k string) string { return first(q, k) }
	if err := jsonapi.ParseQueryInts(get,
		jsonapi.IntParam{Name: "limit", Bits: 32, Set: func(n int64) { r.Limit = int(n) }},
		jsonapi.IntParam{Name: "offset", Bits: 32, Set: func(n int64) { r.Offset = int(n) }}); err != nil {
		return r, err
	}
	if r.Limit < 1 || r.Limit > maxListLimit || r.Offset < 0 || r.Offset > maxListOffset {
		return r, jsonapi.Badf("limit must be 1..%d and offset 0..%d, got %d and %d", maxListLimit, maxListOffset, r.Limit, r.Offset)
	}
	var err error
	if r.From, err = queryTime(get, "from", now.Add(-time.Hour)); err != nil {
		return r, err
	}
	if r.To, err = queryTime(get, "to", now); err != nil {
		return r, err
	}
	if t := r.To.Truncate(time.Minute); !t.Equal(r.To) {
		r.To = t.Add(time.Minute)
	}
	return r, nil
}

func queryTime(get func(string) string, name string, def time.Time) (time.Time, error) {
	v := get(name)
	if v == "" {
		return def, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return t, jsonapi.Badf("%s must be an RFC 3339 time, got %q", name, v)
	}
	return t, nil
}

// MessageMode is how a partition (or the partitions of a list) is read:
// by queue mode (__QUEUE_MODE__), by named groups (a bus), both or neither.
type MessageMode struct {
	HasQueueMode bool
	BusGroups    int
}

func (m MessageMode) kind() string {
	switch {
	case m.HasQueueMode && m.BusGroups > 0:
		return "hybrid"
	case m.HasQueueMode:
		return "queue"
	case m.BusGroups > 0:
		return "bus"
	}
	return "none"
}

// MessageHead is what the list and the detail say of a message alike.
type MessageHead struct {
	ID                      [16]byte
	TransactionID, TraceID  string
	PartitionID             int64
	Queue, Partition        string
	Namespace, Task         string
	Status                  string
	CreatedAt               time.Time
	LeaseExpires            time.Time // the queue mode's live lease; zero: null
	QueueStatus             string    // list only: the status by queue mode alone
	ConsumedBy, TotalGroups int       // named groups whose cursor passed it; named groups
	Priority                []byte    // the queue's priority option as stored (JSON), nil: 0
	ErrorMessage            string    // detail: the newest dead letter's, with HasDeadLetter
	RetryCount              int
	HasDeadLetter           bool
	Payload                 []byte // detail: the JSON as pushed (decrypted)
	Encoded, Encrypted      bool   // detail: a base64 payload (not JSON when sent); stored encrypted
	LeaseTime, RetryLimit   []byte // detail, queueConfig: the queue's options as stored (JSON), nil: the default
	RetryDelay, TTL         []byte
	Groups                  []GroupConsumed // detail
	Mode                    MessageMode     // detail: the partition's
}

// GroupConsumed is one group's view of a message (the detail's
// consumerGroups).
type GroupConsumed struct {
	Name         string
	Consumed     bool
	LeaseExpires time.Time // zero: null
}

func appendHeadStart(out []byte, m *MessageHead) []byte {
	out = append(out, `{"id":"`...)
	out = jsonapi.AppendUUID(out, m.ID)
	out = append(out, `","transactionId":`...)
	out = jsonapi.AppendString(out, m.TransactionID)
	out = append(out, `,"partitionId":"`...)
	out = strconv.AppendInt(out, m.PartitionID, 10)
	out = append(out, `","queuePath":`...)
	out = jsonapi.AppendString(out, m.Queue+"/"+m.Partition)
	out = append(out, `,"queue":`...)
	out = jsonapi.AppendString(out, m.Queue)
	out = append(out, `,"partition":`...)
	out = jsonapi.AppendString(out, m.Partition)
	out = append(out, `,"namespace":`...)
	out = jsonapi.AppendString(out, m.Namespace)
	out = append(out, `,"task":`...)
	out = jsonapi.AppendString(out, m.Task)
	out = append(out, `,"status":`...)
	return jsonapi.AppendString(out, m.Status)
}

func appendTrace(out []byte, m *MessageHead) []byte {
	out = append(out, `,"traceId":`...)
	if m.TraceID == "" {
		return append(out, `null`...)
	}
	return jsonapi.AppendString(out, m.TraceID)
}

func appendTimeOrNull(out []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(out, `null`...)
	}
	out = append(out, '"')
	out = t.UTC().AppendFormat(out, time.RFC3339Nano)
	return append(out, '"')
}

// option appends a stored option if it is a JSON number, else def.
func appendOption(out []byte, stored []byte, def int64) []byte {
	if len(stored) > 0 {
		if _, err := strconv.ParseFloat(string(stored), 64); err == nil {
			return append(out, stored...)
		}
	}
	return strconv.AppendInt(out, def, 10)
}

// AppendMessageList appends the list form's answer: {"messages":[{"id",
// "transactionId","partitionId","queuePath","queue","partition",
// "namespace","task","status","queueStatus","busStatus":{"consumedBy",
// "totalGroups"},"traceId","producerSub","queuePriority","createdAt",
// "leaseExpiresAt"}],"mode":{"hasQueueMode","busGroupsCount","type"}}.
func AppendMessageList(out []byte, msgs []MessageHead, mode MessageMode) []byte {
	out = append(out, `{"messages":[`...)
	for i := range msgs {
		m := &msgs[i]
		if i > 0 {
			out = append(out, ',')
		}
		out = appendHeadStart(out, m)
		out = append(out, `,"queueStatus":`...)
		out = jsonapi.AppendString(out, m.QueueStatus)
		out = append(out, `,"busStatus":{"consumedBy":`...)
		out = strconv.AppendInt(out, int64(m.ConsumedBy), 10)
		out = append(out, `,"totalGroups":`...)
		out = strconv.AppendInt(out, int64(m.TotalGroups), 10)
		out = append(out, '}')
		out = appendTrace(out, m)
		out = append(out, `,"producerSub":null,"queuePriority":`...)
		out = appendOption(out, m.Priority, jsonapi.OptionDefaults["priority"])
		out = append(out, `,"createdAt":`...)
		out = appendTimeOrNull(out, m.CreatedAt)
		out = append(out, `,"leaseExpiresAt":`...)
		out = appendTimeOrNull(out, m.LeaseExpires)
		out = append(out, '}')
	}
	out = append(out, `],"mode":{"hasQueueMode":`...)
	out = strconv.AppendBool(out, mode.HasQueueMode)
	out = append(out, `,"busGroupsCount":`...)
	out = strconv.AppendInt(out, int64(mode.BusGroups), 10)
	out = append(out, `,"type":`...)
	out = jsonapi.AppendString(out, mode.kind())
	return append(out, `}}`...)
}

// AppendMessageDetail appends a message's detail: {"id","transactionId",
// "partitionId","queuePath","queue","partition","namespace","task",
// "status","payload","isEncrypted","traceId","producerSub","createdAt",
// "errorMessage","retryCount","leaseExpiresAt","queueConfig":{"leaseTime",
// "retryLimit","retryDelay","ttl","priority"},"mode":{"hasQueueMode",
// "busGroupsCount","consumedByGroups","type"},"consumerGroups":[{"name",
// "consumed","leaseExpiresAt"}]}, and "encoding":"base64" after a payload
// stored from a body that was not JSON. Options not set on the queue are
// their defaults (OptionDefaults).
func AppendMessageDetail(out []byte, m *MessageHead) []byte {
	out = appendHeadStart(out, m)
	out = append(out, `,"payload":`...)
	out = append(out, m.Payload...)
	if m.Encoded {
		out = append(out, `,"encoding":"base64"`...)
	}
	out = append(out, `,"isEncrypted":`...)
	out = strconv.AppendBool(out, m.Encrypted)
	out = appendTrace(out, m)
	out = append(out, `,"producerSub":null,"createdAt":`...)
	out = appendTimeOrNull(out, m.CreatedAt)
	if m.HasDeadLetter {
		out = append(out, `,"errorMessage":`...)
		out = jsonapi.AppendString(out, m.ErrorMessage)
		out = append(out, `,"retryCount":`...)
		out = strconv.AppendInt(out, int64(m.RetryCount), 10)
	} else {
		out = append(out, `,"errorMessage":null,"retryCount":null`...)
	}
	out = append(out, `,"leaseExpiresAt":`...)
	out = appendTimeOrNull(out, m.LeaseExpires)
	out = append(out, `,"queueConfig":{"leaseTime":`...)
	out = appendOption(out, m.LeaseTime, jsonapi.OptionDefaults["leaseTime"])
	out = append(out, `,"retryLimit":`...)
	out = appendOption(out, m.RetryLimit, jsonapi.OptionDefaults["retryLimit"])
	out = append(out, `,"retryDelay":`...)
	out = appendOption(out, m.RetryDelay, jsonapi.OptionDefaults["retryDelay"])
	out = append(out, `,"ttl":`...)
	out = appendOption(out, m.TTL, jsonapi.OptionDefaults["ttl"])
	out = append(out, `,"priority":`...)
	out = appendOption(out, m.Priority, jsonapi.OptionDefaults["priority"])
	out = append(out, `},"mode":{"hasQueueMode":`...)
	out = strconv.AppendBool(out, m.Mode.HasQueueMode)
	out = append(out, `,"busGroupsCount":`...)
	out = strconv.AppendInt(out, int64(m.Mode.BusGroups), 10)
	out = append(out, `,"consumedByGroups":`...)
	out = strconv.AppendInt(out, int64(m.ConsumedBy), 10)
	out = append(out, `,"type":`...)
	out = jsonapi.AppendString(out, m.Mode.kind())
	out = append(out, `},"consumerGroups":[`...)
	for i, g := range m.Groups {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"name":`...)
		out = jsonapi.AppendString(out, g.Name)
		out = append(out, `,"consumed":`...)
		out = strconv.AppendBool(out, g.Consumed)
		out = append(out, `,"leaseExpiresAt":`...)
		out = appendTimeOrNull(out, g.LeaseExpires)
		out = append(out, '}')
	}
	return append(out, `]}`...)
}

// ErrMessageNotFound is the detail's 404 message.
const ErrMessageNotFound = "Message not found"

// AppendMessageDeleted appends the delete's answer: {"success",
// "partitionId","transactionId","message"}, the ids as the path gave them.
func AppendMessageDeleted(out []byte, deleted bool, partitionID, transactionID string) []byte {
	out = append(out, `{"success":`...)
	out = strconv.AppendBool(out, deleted)
	out = append(out, `,"partitionId":`...)
	out = jsonapi.AppendString(out, partitionID)
	out = append(out, `,"transactionId":`...)
	out = jsonapi.AppendString(out, transactionID)
	msg := ErrMessageNotFound
	if deleted {
		msg = "Message deleted successfully"
	}
	out = append(out, `,"message":`...)
	out = jsonapi.AppendString(out, msg)
	return append(out, '}')
}
