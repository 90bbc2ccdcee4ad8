package jsonapi

import (
	"strconv"
	"time"
)

// DeadLettersRequest is GET /api/v1/dlq's query, or the body of
// <prefix>.v1.dlq.
type DeadLettersRequest struct {
	Queue         string `json:"queue"`
	ConsumerGroup string `json:"consumerGroup"`
	Limit         int    `json:"limit"`
	Offset        int    `json:"offset"`
}

// ParseDeadLettersQuery reads GET /api/v1/dlq's query parameters.
func ParseDeadLettersQuery(get func(string) string) (DeadLettersRequest, error) {
	r := DeadLettersRequest{Queue: get("queue"), ConsumerGroup: get("consumerGroup")}
	err := ParseQueryInts(get,
		IntParam{"limit", 32, func(n int64) { r.Limit = int(n) }},
		IntParam{"offset", 32, func(n int64) { r.Offset = int(n) }})
	return r, err
}

// DecodeDeadLetters reads the body of <prefix>.v1.dlq.
func DecodeDeadLetters(body []byte) (DeadLettersRequest, error) {
	var r DeadLettersRequest
	return r, decodeBody(body, "dlq", &r)
}

// Validate checks the request and fills in its default: limit 100.
func (r *DeadLettersRequest) Validate() error {
	if err := CheckName("queue", r.Queue, r.Queue != ""); err != nil {
		return err
	}
	if r.Limit == 0 {
		r.Limit = 100
	}
	if r.Limit < 1 || r.Limit > 1000 || r.Offset < 0 {
		return Badf("limit must be 1..1000 and offset at least 0, got %d and %d", r.Limit, r.Offset)
	}
	return nil
}

// DeadLetter is one dead letter of the answer; Found is false when
// retention removed its message (id, data and createdAt are then null).
type DeadLetter struct {
	ID            [16]byte
	Found         bool
	TransactionID string
	PartitionID   int64
	Queue         string
	Partition     string
	Group         string
	Error         string
	RetryCount    int
	Offset        int64
	Payload       []byte // the JSON as pushed (decrypted)
	Encoded       bool   // the payload is the base64 string of a body that was not JSON
	CreatedAt     time.Time
	FailedAt      time.Time
}

// AppendDeadLetters appends {"messages":[...],"pagination":{"limit",
// "offset","total"}}.
func AppendDeadLetters(out []byte, dls []DeadLetter, limit, offset int, total int64) []byte {
	out = append(out, `{"messages":[`...)
	for i := range dls {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendDeadLetter(out, &dls[i])
	}
	out = append(out, `],"pagination":{"limit":`...)
	out = strconv.AppendInt(out, int64(limit), 10)
	out = append(out, `,"offset":`...)
	out = strconv.AppendInt(out, int64(offset), 10)
	out = append(out, `,"total":`...)
	out = strconv.AppendInt(out, total, 10)
	return append(out, `}}`...)
}

func appendDeadLetter(out []byte, d *DeadLetter) []byte {
	out = append(out, `{"id":`...)
	if d.Found {
		out = append(out, '"')
		out = AppendUUID(out, d.ID)
		out = append(out, '"')
	} else {
		out = append(out, `null`...)
	}
	out = append(out, `,"transactionId":`...)
	out = AppendString(out, d.TransactionID)
	out = append(out, `,"partitionId":"`...)
	out = strconv.AppendInt(out, d.PartitionID, 10)
	out = append(out, `","queue":`...)
	out = AppendString(out, d.Queue)
	out = append(out, `,"partition":`...)
	out = AppendString(out, d.Partition)
	out = append(out, `,"consumerGroup":`...)
	out = AppendString(out, d.Group)
	out = append(out, `,"errorMessage":`...)
	out = AppendString(out, d.Error)
	out = append(out, `,"retryCount":`...)
	out = strconv.AppendInt(out, int64(d.RetryCount), 10)
	out = append(out, `,"offset":`...)
	out = strconv.AppendInt(out, d.Offset, 10)
	out = append(out, `,"data":`...)
	if d.Found {
		out = append(out, d.Payload...)
		if d.Encoded {
			out = append(out, `,"encoding":"base64"`...)
		}
		out = append(out, `,"createdAt":"`...)
		out = d.CreatedAt.UTC().AppendFormat(out, time.RFC3339Nano)
		out = append(out, '"')
	} else {
		out = append(out, `null,"createdAt":null`...)
	}
	out = append(out, `,"failedAt":"`...)
	out = d.FailedAt.UTC().AppendFormat(out, time.RFC3339Nano)
	return append(out, `"}`...)
}
