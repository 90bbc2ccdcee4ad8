package jsonapi

import (
	"strconv"
	"time"
)

// Item statuses on the wire.
const (
	StatusQueued    = "queued"
	StatusDuplicate = "duplicate"
	StatusBuffered  = "buffered"
	StatusFailed    = "failed"
)

// Result is what one pushed item is answered.
type Result struct {
	Status    string
	MessageID [16]byte
	HasID     bool
	Offset    int64 // queued, duplicate
	CreatedAt time.Time
	Error     string // failed
	// PartitionID is the stored partition's id (queued), for Queen's
	// partition_id.
	PartitionID int64
}

// AppendResult appends the answer of item index (one small object, written
// by hand: no reflection) for its resolved transactionId, traceId, queue and
// partition. Each answer carries the facts twice: in this service's
// spelling, and in Queen's (message_id, transaction_id, trace_id,
// queueName, partition_id), so that Queen's own clients read it unchanged.
func AppendResult(out []byte, index int, r *Result, txid, traceID, queue, partition string) []byte {
	out = append(out, `{"index":`...)
	out = strconv.AppendInt(out, int64(index), 10)
	out = append(out, `,"status":"`...)
	out = append(out, r.Status...)
	out = append(out, '"')
	var idAt int // where the message id's text starts (when HasID)
	if r.HasID {
		out = append(out, `,"messageId":"`...)
		idAt = len(out)
		out = AppendUUID(out, r.MessageID)
		out = append(out, '"')
	}
	out = append(out, `,"transactionId":`...)
	txAt := len(out)
	out = AppendString(out, txid)
	txEnd := len(out)
	out = append(out, `,"queue":`...)
	qAt := len(out)
	out = AppendString(out, queue)
	qEnd := len(out)
	out = append(out, `,"partition":`...)
	out = AppendString(out, partition)
	if r.Status == StatusQueued || r.Status == StatusDuplicate {
		out = append(out, `,"offset":`...)
		out = strconv.AppendInt(out, r.Offset, 10)
	}
	if r.Status == StatusQueued {
		out = append(out, `,"createdAt":"`...)
		out = r.CreatedAt.UTC().AppendFormat(out, time.RFC3339Nano)
		out = append(out, '"')
	}
	if r.Error != "" {
		out = append(out, `,"error":`...)
		out = AppendString(out, r.Error)
	}
	// Queen's spelling: the same texts, copied rather than encoded again.
	if r.HasID {
		out = append(out, `,"message_id":"`...)
		out = append(out, out[idAt:idAt+36]...)
		out = append(out, '"')
	}
	out = append(out, `,"transaction_id":`...)
	out = append(out, out[txAt:txEnd]...)
	out = append(out, `,"trace_id":`...)
	if traceID == "" {
		out = append(out, "null"...)
	} else {
		out = AppendString(out, traceID)
	}
	out = append(out, `,"queueName":`...)
	out = append(out, out[qAt:qEnd]...)
	if r.Status == StatusQueued {
		out = append(out, `,"partition_id":"`...)
		out = strconv.AppendInt(out, r.PartitionID, 10)
		out = append(out, '"')
	}
	return append(out, '}')
}
