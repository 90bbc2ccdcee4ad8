package jsonapi

import (
	"strconv"
	"time"
)

// FetchRequest is a read: GET /api/v1/messages query parameters, or the
// JSON body of <prefix>.v1.fetch.
type FetchRequest struct {
	Queue     string `json:"queue"`
	Partition string `json:"partition"`
	From      int64  `json:"from"`
	Limit     int    `json:"limit"`
	WaitMs    int    `json:"waitMs"`
	MaxBytes  int64  `json:"maxBytes"`
}

const (
	maxReadLimit = 1000
	maxWait      = 5 * time.Minute
	// DefaultReadBytes and MaxReadBytes bound the payload bytes of one read
	// page (maxBytes); a page always holds at least one message.
	DefaultReadBytes = 1 << 20
	MaxReadBytes     = 16 << 20
)

// Validate checks a read and fills in its defaults: partition Default,
// from 1, limit 100 (0 means the default too), maxBytes 1 MiB.
func (r *FetchRequest) Validate() error {
	if err := CheckName("queue", r.Queue, r.Queue != ""); err != nil {
		return err
	}
	if r.Partition == "" {
		r.Partition = DefaultPartition
	}
	if err := CheckName("partition", r.Partition, true); err != nil {
		return err
	}
	switch {
	case r.From == 0:
		r.From = 1
	case r.From < 0:
		return Badf("from must be at least 1, got %d", r.From)
	}
	switch {
	case r.Limit == 0:
		r.Limit = 100
	case r.Limit < 0 || r.Limit > maxReadLimit:
		return Badf("limit must be 1..%d, got %d", maxReadLimit, r.Limit)
	}
	switch {
	case r.MaxBytes == 0:
		r.MaxBytes = DefaultReadBytes
	case r.MaxBytes < 0 || r.MaxBytes > MaxReadBytes:
		return Badf("maxBytes must be 1..%d, got %d", MaxReadBytes, r.MaxBytes)
	}
	if r.WaitMs < 0 || int64(r.WaitMs) > maxWait.Milliseconds() { // compared before any arithmetic can overflow
		return Badf("waitMs must be 0..%d, got %d", maxWait.Milliseconds(), r.WaitMs)
	}
	return nil
}

// AppendMessage appends one message of a read answer. The payload goes out
// as stored (decrypted first for encrypted queues), never re-encoded. A
// payload stored from a body that was not JSON (encoded: the base64 JSON
// string BodyPayload made) is marked "encoding":"base64"; without the field
// the payload is the JSON that was sent.
func AppendMessage(out []byte, offset int64, id [16]byte, txid, traceID string, payload []byte, encoded bool, createdAt time.Time) []byte {
	out = append(out, `{"offset":`...)
	out = strconv.AppendInt(out, offset, 10)
	out = append(out, `,"messageId":"`...)
	out = AppendUUID(out, id)
	out = append(out, `","transactionId":`...)
	out = AppendString(out, txid)
	out = append(out, `,"traceId":`...)
	out = AppendString(out, traceID)
	out = append(out, `,"payload":`...)
	out = append(out, payload...)
	if encoded {
		out = append(out, `,"encoding":"base64"`...)
	}
	out = append(out, `,"createdAt":"`...)
	out = createdAt.UTC().AppendFormat(out, time.RFC3339Nano)
	out = append(out, `"}`...)
	return out
}

// OpenMessages opens a read answer: {"messages":[ — AppendMessage then
// appends each message, comma-separated, and CloseMessages closes it with
// the offset to read from next.
func OpenMessages(out []byte) []byte { return append(out, `{"messages":[`...) }

// CloseMessages closes what OpenMessages opened: ],"next":n}.
func CloseMessages(out []byte, next int64) []byte {
	out = append(out, `],"next":`...)
	out = strconv.AppendInt(out, next, 10)
	return append(out, '}')
}
