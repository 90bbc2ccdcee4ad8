package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// Txn is one transaction: pushes and acknowledgements of popped messages
// that the bridge commits together or not at all (docs/transactions.md).
type Txn struct {
	// Push are the items to push, in order.
	Push []Item
	// Ack are popped messages to acknowledge, under the lease that
	// delivered them: a lease lost meanwhile fails the transaction.
	Ack []Message
	// Group is the consumer group of Ack ("" is queue mode).
	Group string
	// Status of every acknowledgement: "" (completed), "completed",
	// "success", or "failed"/"dlq", which send the messages to the dead
	// letters at once. Default "".
	Status string
	// Error is the dead-letter text of failed acknowledgements.
	Error string
}

// TxnResult is a committed transaction's answer: one result per operation,
// the pushes first, then the acknowledgements, as sent.
type TxnResult struct {
	TransactionID string        `json:"transactionId"`
	Results       []TxnOpResult `json:"results"`
}

// TxnOpResult is the answer to one operation of a committed transaction.
type TxnOpResult struct {
	Index         int       `json:"index"`
	Type          string    `json:"type"` // "push" or "ack"
	TransactionID string    `json:"transactionId"`
	MessageID     string    `json:"messageId"`   // push
	PartitionID   string    `json:"partitionId"` // push
	Queue         string    `json:"queueName"`   // push
	Partition     string    `json:"partition"`   // push
	Offset        int64     `json:"offset"`      // push
	CreatedAt     time.Time `json:"createdAt"`   // push
	DLQ           bool      `json:"dlq"`         // ack: written to the dead letters
}

// TxnError is a transaction the bridge did not commit (answered success
// false): nothing of it was written, or, when the bridge says the outcome
// is unknown, perhaps all of it.
type TxnError struct {
	Message string
}

func (e *TxnError) Error() string { return "client: transaction not committed: " + e.Message }

// Commit sends a transaction. A refusal that may pass later (503: the
// bridge in maintenance mode or stopping) and a request that got no answer
// are sent again, the same body, until the retry budget is spent
// (ErrGaveUp). Pushed items without a transactionId get one (a UUIDv7)
// before the first attempt, so a resent transaction that had committed
// writes nothing twice: it fails instead, on its acknowledgements (already
// applied) or its pushes (duplicates), with a *TxnError. Not committed:
// a *TxnError; refused: a *RequestError.
func (c *Client) Commit(ctx context.Context, tx Txn) (*TxnResult, error) {
	type op struct {
		Type          string     `json:"type"`
		Items         []wireItem `json:"items,omitempty"`
		TransactionID string     `json:"transactionId,omitempty"`
		PartitionID   string     `json:"partitionId,omitempty"`
		Status        string     `json:"status,omitempty"`
		ConsumerGroup string     `json:"consumerGroup,omitempty"`
		LeaseID       string     `json:"leaseId,omitempty"`
		Error         string     `json:"error,omitempty"`
	}
	var ops []op
	if len(tx.Push) > 0 {
		items := make([]wireItem, len(tx.Push))
		for i, it := range tx.Push {
			if it.TransactionID == "" {
				it.TransactionID = uuid.Must(uuid.NewV7()).String()
			}
			items[i] = wire(it)
		}
		ops = append(ops, op{Type: "push", Items: items})
	}
	for _, m := range tx.Ack {
		ops = append(ops, op{Type: "ack", TransactionID: m.TransactionID, PartitionID: m.PartitionID, Status: tx.Status,
			ConsumerGroup: tx.Group, LeaseID: m.LeaseID, Error: tx.Error})
	}
	if len(ops) == 0 {
		return nil, errors.New("client: a transaction needs something to push or acknowledge")
	}
	data, err := json.Marshal(struct {
		Operations []op `json:"operations"`
	}{ops})
	if err != nil {
		return nil, fmt.Errorf("client: encode: %w", err)
	}
	r := c.newRetry()
	for attempt := 0; ; attempt++ {
		res, err := c.commitOnce(ctx, data)
		var refused *RequestError
		var failed *TxnError
		switch {
		case err == nil:
			return res, nil
		case errors.As(err, &failed), errors.As(err, &refused) && !refused.retryable():
			return nil, err
		}
		if err := r.pause(ctx, attempt, err); err != nil {
			return nil, err
		}
	}
}

// commitOnce sends the body once and reads the answer.
func (c *Client) commitOnce(ctx context.Context, data []byte) (*TxnResult, error) {
	actx, cancel := context.WithTimeout(ctx, c.cfg.AttemptTimeout)
	defer cancel()
	subject := c.cfg.Prefix + ".v1.transaction"
	if c.cfg.Tenant != "" {
		subject += "." + c.cfg.Tenant
	}
	answer, err := c.call(actx, subject, http.MethodPost, "/api/v1/transaction", data)
	if err != nil {
		return nil, err
	}
	var res struct {
		TxnResult
		Success bool    `json:"success"`
		Error   *string `json:"error"`
	}
	if err := json.Unmarshal(answer, &res); err != nil {
		return nil, fmt.Errorf("client: transaction answer of %d bytes: %v", len(answer), err)
	}
	if !res.Success {
		msg := "transaction failed"
		if res.Error != nil {
			msg = *res.Error
		}
		return nil, &TxnError{Message: msg}
	}
	return &res.TxnResult, nil
}

// Pop makes one pop of queue for group ("" is queue mode) with Consume's
// options (Batch, Partitions, Partition, Wait, ...), and neither handles
// nor acknowledges what it delivers: the messages stay leased to the
// caller until it acknowledges them (Ack, or Commit in a transaction) or
// the lease expires. None when nothing came before the wait ended.
func (c *Client) Pop(ctx context.Context, queue, group string, opts ...ConsumeOptions) ([]Message, error) {
	var o ConsumeOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	o.defaults()
	return c.pop(ctx, queue, group, o)
}
