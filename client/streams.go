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

// Streaming queries (docs/streams.md): the bridge keeps a query's
// registration and per-partition state; a program that runs its own
// operators commits each processed batch of a source partition as a cycle:
// state changes, sink pushes and the source acknowledgement together, as
// Queen's Streams SDK does.

// StreamQuery registers a streaming query by name.
type StreamQuery struct {
	Name, Source, Sink string // Sink may be ""
	// ConfigHash fingerprints the query's operators: registering a known
	// name with another hash is refused (a *RequestError, 409) unless
	// Reset, which drops the query's state.
	ConfigHash string
	Reset      bool
}

// StreamRegistration is what a registration answered.
type StreamRegistration struct {
	QueryID    string `json:"query_id"`
	Name       string `json:"name"`
	ConfigHash string `json:"config_hash"`
	Fresh      bool   `json:"fresh"` // the name was unknown
	Reset      bool   `json:"reset"` // the state was dropped
}

// RegisterStream registers q (idempotent by name) and returns its query id.
func (c *Client) RegisterStream(ctx context.Context, q StreamQuery) (*StreamRegistration, error) {
	body := map[string]any{"name": q.Name, "source_queue": q.Source, "config_hash": q.ConfigHash, "reset": q.Reset}
	if q.Sink != "" {
		body["sink_queue"] = q.Sink
	}
	var out StreamRegistration
	if err := c.streamCall(ctx, "queries", "/streams/v1/queries", body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// StateQuery reads state rows of one (query, partition); filters combine.
type StateQuery struct {
	QueryID     string
	PartitionID string   // the partition id a pop delivered (Message.PartitionID)
	Keys        []string // nil: every key
	Prefix      string
	// RipeAtOrBefore, when set, keeps rows whose value's windowEnd is a
	// number at most this (epoch ms).
	RipeAtOrBefore *int64
}

// StateRow is one state row.
type StateRow struct {
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// StreamState reads state rows, ordered by key.
func (c *Client) StreamState(ctx context.Context, q StateQuery) ([]StateRow, error) {
	body := map[string]any{"query_id": q.QueryID, "partition_id": q.PartitionID, "keys": q.Keys}
	if q.Keys == nil {
		body["keys"] = []string{}
	}
	if q.Prefix != "" {
		body["key_prefix"] = q.Prefix
	}
	if q.RipeAtOrBefore != nil {
		body["ripe_at_or_before"] = *q.RipeAtOrBefore
	}
	var out struct {
		Rows []StateRow `json:"rows"`
	}
	if err := c.streamCall(ctx, "state.get", "/streams/v1/state/get", body, &out); err != nil {
		return nil, err
	}
	return out.Rows, nil
}

// StateOp is one state operation of a cycle: Value stored under Key, or
// Key deleted.
type StateOp struct {
	Key    string
	Value  any // stored as JSON
	Delete bool
}

// Cycle is one processed batch of one source partition.
type Cycle struct {
	QueryID     string
	PartitionID string // the source partition's id, as the pop delivered it
	Group       string // the consumer group of the pop ("" is queue mode)
	State       []StateOp
	Push        []Item
	// Ack is the last message of the batch to acknowledge (nil: none): the
	// cursor moves to it, under the lease that delivered it. Count is how
	// many messages the batch had.
	Ack   *Message
	Count int
	// Status "" (completed) or "failed"/"dlq": the acknowledged message
	// goes to the dead letters, with Error as its text.
	Status, Error string
	// KeepLease keeps the lease when the acknowledgement leaves some of
	// what it delivered unacknowledged (that tail comes again in order);
	// by default the lease is released.
	KeepLease bool
}

// CycleResult is a committed cycle's answer.
type CycleResult struct {
	QueryID     string `json:"query_id"`
	PartitionID string `json:"partition_id"`
	Queue       string `json:"queueName"`
	StateOps    int    `json:"state_ops_applied"`
	Pushes      []struct {
		MessageID     string `json:"messageId"`
		TransactionID string `json:"transactionId"`
		Queue         string `json:"queue"`
		Partition     string `json:"partition"`
		Offset        int64  `json:"offset"`
	} `json:"push_results"`
	Ack *struct {
		Count         int  `json:"count"`
		LeaseReleased bool `json:"lease_released"`
		DLQ           bool `json:"dlq"`
	} `json:"ack_result"`
}

// CommitCycle commits a cycle, as Commit a transaction: all of it or none
// (a *TxnError). A refusal that may pass later and a request that got no
// answer are sent again, the same body; pushed items without a
// transactionId get one first, so a resent cycle that had committed
// writes nothing twice (it fails on its acknowledgement or its pushes).
func (c *Client) CommitCycle(ctx context.Context, cy Cycle) (*CycleResult, error) {
	type op struct {
		Type  string `json:"type"`
		Key   string `json:"key"`
		Value any    `json:"value,omitempty"`
	}
	body := map[string]any{"query_id": cy.QueryID, "partition_id": cy.PartitionID, "release_lease": !cy.KeepLease}
	if cy.Group != "" {
		body["consumer_group"] = cy.Group
	}
	ops := make([]op, len(cy.State))
	for i, s := range cy.State {
		ops[i] = op{Type: "upsert", Key: s.Key, Value: s.Value}
		if s.Delete {
			ops[i] = op{Type: "delete", Key: s.Key}
		}
	}
	body["state_ops"] = ops
	items := make([]wireItem, len(cy.Push))
	for i, it := range cy.Push {
		if it.TransactionID == "" {
			it.TransactionID = uuid.Must(uuid.NewV7()).String()
		}
		items[i] = wire(it)
	}
	body["push_items"] = items
	if m := cy.Ack; m != nil {
		body["ack"] = map[string]any{"transactionId": m.TransactionID, "leaseId": m.LeaseID, "status": cy.Status, "error": cy.Error,
			"count": max(cy.Count, 1)}
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("client: encode: %w", err)
	}
	r := c.newRetry()
	for attempt := 0; ; attempt++ {
		var res struct {
			CycleResult
			Success bool   `json:"success"`
			Error   string `json:"error"`
		}
		err := c.streamOnce(ctx, "cycle", "/streams/v1/cycle", data, &res)
		var refused *RequestError
		switch {
		case err == nil && res.Success:
			return &res.CycleResult, nil
		case err == nil:
			return nil, &TxnError{Message: res.Error}
		case errors.As(err, &refused) && !refused.retryable():
			return nil, err
		}
		if err := r.pause(ctx, attempt, err); err != nil {
			return nil, err
		}
	}
}

// streamCall sends a registration or a state read, retried as a cycle is.
func (c *Client) streamCall(ctx context.Context, what, path string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("client: encode: %w", err)
	}
	r := c.newRetry()
	for attempt := 0; ; attempt++ {
		err := c.streamOnce(ctx, what, path, data, out)
		var refused *RequestError
		if err == nil || errors.As(err, &refused) && !refused.retryable() {
			return err
		}
		if err := r.pause(ctx, attempt, err); err != nil {
			return err
		}
	}
}

// streamOnce sends data once to <prefix>.v1.streams.<what> (with the
// tenant's suffix) or path, and reads the answer into out.
func (c *Client) streamOnce(ctx context.Context, what, path string, data []byte, out any) error {
	actx, cancel := context.WithTimeout(ctx, c.cfg.AttemptTimeout)
	defer cancel()
	subject := c.cfg.Prefix + ".v1.streams." + what
	if c.cfg.Tenant != "" {
		subject += "." + c.cfg.Tenant
	}
	answer, err := c.call(actx, subject, http.MethodPost, path, data)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(answer, out); err != nil {
		return fmt.Errorf("client: streams answer of %d bytes: %v", len(answer), err)
	}
	return nil
}
