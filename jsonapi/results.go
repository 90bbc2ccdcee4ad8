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
}

// AppendResult appends the answer of item index (one small object, written
// by hand: no reflection) for its resolved transactionId, queue and
// partition.
func AppendResult(out []byte, index int, r *Result, txid, queue, partition string) []byte {
	out = append(out, `{"index":`...)
	out = strconv.AppendInt(out, int64(index), 10)
	out = append(out, `,"status":"`...)
	out = append(out, r.Status...)
	out = append(out, '"')
	if r.HasID {
		out = append(out, `,"messageId":"`...)
		out = AppendUUID(out, r.MessageID)
		out = append(out, '"')
	}
	out = append(out, `,"transactionId":`...)
	out = AppendString(out, txid)
	out = append(out, `,"queue":`...)
	out = AppendString(out, queue)
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
	return append(out, '}')
}
