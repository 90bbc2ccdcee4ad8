package jsonapi

import (
	"encoding/json"
	"strconv"
)

// RequeueRequest is POST /api/v1/dlq/requeue's body: the dead letters of a
// queue to send again, of one group or of every group, of one message
// (PartitionID and TransactionID) or of all.
type RequeueRequest struct {
	Queue         string
	ConsumerGroup string // "": every group's
	PartitionID   int64  // with TransactionID: one message; 0 and "": every dead letter of the queue
	TransactionID string
}

// One reports whether the request names one message.
func (r RequeueRequest) One() bool { return r.PartitionID != 0 }

// DecodeRequeue reads and checks a requeue body: {"queue"} required,
// "consumerGroup" optional, "partitionId" and "transactionId" both or
// neither. A refusal is a BadRequest naming the field.
func DecodeRequeue(body []byte) (RequeueRequest, error) {
	var w struct {
		Queue         *string         `json:"queue"`
		ConsumerGroup *string         `json:"consumerGroup"`
		PartitionID   json.RawMessage `json:"partitionId"`
		TransactionID *string         `json:"transactionId"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return RequeueRequest{}, Badf("requeue body: %s", err.Error())
	}
	var r RequeueRequest
	if err := CheckName("queue", deref(w.Queue), w.Queue != nil); err != nil {
		return r, err
	}
	r.Queue = *w.Queue
	if w.ConsumerGroup != nil {
		if err := CheckName("consumerGroup", *w.ConsumerGroup, true); err != nil {
			return r, err
		}
		r.ConsumerGroup = *w.ConsumerGroup
	}
	hasPID := len(w.PartitionID) > 0 && string(w.PartitionID) != "null"
	if hasPID != (w.TransactionID != nil) {
		return r, Badf("partitionId and transactionId go together: both (one message) or neither (every dead letter of the queue)")
	}
	if !hasPID {
		return r, nil
	}
	pid, err := partitionID(w.PartitionID)
	if err != nil {
		return r, Badf("partitionId %s", err.Error())
	}
	if err := CheckName("transactionId", *w.TransactionID, true); err != nil {
		return r, err
	}
	r.PartitionID, r.TransactionID = pid, *w.TransactionID
	return r, nil
}

// Requeued is one message sent again: its dead letter's transactionId and
// the new push's, where it went, and the groups whose dead letters of it
// were removed. Already: an earlier requeue had pushed it (the push was
// answered as a duplicate of that copy, at Offset).
type Requeued struct {
	TransactionID    string
	NewTransactionID string
	PartitionID      int64
	Partition        string
	Offset           int64
	Groups           []string
	Already          bool
}

type requeuedJSON struct {
	TransactionID    string   `json:"transactionId"`
	NewTransactionID string   `json:"newTransactionId"`
	PartitionID      string   `json:"partitionId"`
	Partition        string   `json:"partition"`
	Offset           int64    `json:"offset"`
	ConsumerGroups   []string `json:"consumerGroups"`
	AlreadyRequeued  bool     `json:"alreadyRequeued"`
}

// AppendRequeued appends {"requeued","more","messages":[...]}.
func AppendRequeued(dst []byte, msgs []Requeued, more bool) []byte {
	out := struct {
		Requeued int            `json:"requeued"`
		More     bool           `json:"more"`
		Messages []requeuedJSON `json:"messages"`
	}{Requeued: len(msgs), More: more, Messages: make([]requeuedJSON, len(msgs))}
	for i, m := range msgs {
		gs := m.Groups
		if gs == nil {
			gs = []string{}
		}
		out.Messages[i] = requeuedJSON{TransactionID: m.TransactionID, NewTransactionID: m.NewTransactionID,
			PartitionID: strconv.FormatInt(m.PartitionID, 10), Partition: m.Partition, Offset: m.Offset, ConsumerGroups: gs, AlreadyRequeued: m.Already}
	}
	return AppendResource(dst, out)
}
