package consume

import (
	"context"
	"fmt"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/segment"
)

// The consumer API as the transports serve it: a request as jsonapi
// decoded it in, a status and a body that jsonapi renders out. Both
// transports share these; a 204 has no body.

// ServePop validates and runs a pop; 204 when nothing was delivered. The
// answer is bounded to maxBytes (0: unbounded), which NATS sets to what
// one message carries: a message larger than that alone is refused (413,
// naming it) and its claim handed back (fit.go). A pop whose requester
// left (its context ended, its expiresMs passed, a cancel of its
// requestId came) hands back what it claimed instead of answering
// (cancel.go).
func (c *Consumer) ServePop(ctx context.Context, tenant tenancy.TenantID, req jsonapi.PopRequest, maxBytes int64) (int, []byte) {
	if err := req.Validate(); err != nil {
		return jsonapi.StatusBadRequest, jsonapi.ErrorBody(err.Error())
	}
	var wait time.Duration
	if req.Wait {
		wait = time.Duration(req.TimeoutMs) * time.Millisecond
	}
	start, expires := time.Now(), time.Duration(req.ExpiresMs)*time.Millisecond
	if expires > 0 { // never parked past what its requester waits
		wait = min(wait, jsonapi.RequesterWait(expires))
	}
	ctx, ticket, err := c.pending.begin(ctx, tenant, req.RequestID)
	if err != nil {
		return jsonapi.StatusBadRequest, jsonapi.ErrorBody(err.Error())
	}
	defer ticket.finish()
	if ctx.Err() != nil { // its cancel came first, or its requester is gone
		return jsonapi.StatusServiceUnavailable, jsonapi.ErrorBody("the pop was cancelled before it ran: nothing claimed")
	}
	got, err := c.Pop(ctx, tenant, PopRequest{Queue: req.Queue, Partition: req.Partition, Group: req.ConsumerGroup,
		Batch: req.Batch, Partitions: req.Partitions, AutoAck: req.AutoAck, SubscriptionMode: req.SubscriptionMode,
		SubscriptionFrom: req.From, Wait: wait, MaxBytes: maxBytes})
	if err != nil && len(got.Parts) == 0 {
		return jsonapi.StatusServiceUnavailable, jsonapi.ErrorBody(err.Error())
	}
	n := got.Count()
	if n == 0 {
		return jsonapi.StatusNoContent, nil
	}
	lease := ""
	if !req.AutoAck {
		lease = string(jsonapi.AppendUUID(nil, got.Lease))
	}
	if maxBytes > 0 {
		if got, err = c.fitAnswer(ctx, tenant, req, got, lease, maxBytes); err != nil {
			return jsonapi.StatusTooLarge, jsonapi.ErrorBody(err.Error())
		}
	}
	if status, out, gone := c.requesterGone(ctx, tenant, req, got, ticket, expires > 0 && time.Since(start) >= expires); gone {
		return status, out
	}
	first := got.Parts[0]
	size := 256 // the head and the close
	for _, p := range got.Parts {
		for i := range p.Messages {
			m := &p.Messages[i]
			size += 1 + jsonapi.PoppedLen(&jsonapi.PoppedMessage{TransactionID: m.Frame.TransactionID, TraceID: m.Frame.TraceID,
				Payload: m.Frame.Payload, Partition: p.Partition}, lease, req.ConsumerGroup)
		}
	}
	out := make([]byte, 0, size)
	out = jsonapi.AppendPopHead(out, &jsonapi.PopHead{Queue: req.Queue, Partition: first.Partition, PartitionID: first.PartitionID,
		Lease: lease, Group: req.ConsumerGroup, Claimed: len(got.Parts)})
	k := 0
	for _, p := range got.Parts {
		for i := range p.Messages {
			m := &p.Messages[i]
			payload, err := c.cfg.Payloads.Plain(tenant, req.Queue, p.Partition, m.Frame.Flags, m.Frame.Payload)
			if err != nil {
				return jsonapi.StatusInternalServerError, jsonapi.ErrorBody(fmt.Sprintf("message at offset %d of partition %s: %v", m.Offset, p.Partition, err))
			}
			if k > 0 {
				out = append(out, ',')
			}
			k++
			out = jsonapi.AppendPopped(out, &jsonapi.PoppedMessage{ID: m.Frame.ID, TransactionID: m.Frame.TransactionID, TraceID: m.Frame.TraceID,
				Payload: payload, Encoded: m.Frame.Flags&segment.FlagBase64 != 0, CreatedAt: m.CreatedAt, PartitionID: p.PartitionID, Partition: p.Partition},
				lease, req.ConsumerGroup)
		}
	}
	return jsonapi.StatusOK, jsonapi.ClosePop(out)
}

// ServeAck applies decoded acknowledgements (jsonapi.DecodeAck or
// DecodeAnyAck; err is the decoding's) and answers one result per
// acknowledgement, in request order.
func (c *Consumer) ServeAck(ctx context.Context, tenant tenancy.TenantID, wire []jsonapi.Ack, err error) (int, []byte) {
	if err != nil {
		return jsonapi.StatusBadRequest, jsonapi.ErrorBody(err.Error())
	}
	acks := make([]Ack, len(wire))
	for i, a := range wire {
		acks[i] = Ack{TransactionID: a.TransactionID, PartitionID: a.PartitionID, Group: a.ConsumerGroup, Lease: a.Lease,
			Status: AckStatus(a.Status), Error: a.Error}
	}
	outcomes := c.Ack(ctx, tenant, acks)
	results := make([]jsonapi.AckResult, len(outcomes))
	for i, o := range outcomes {
		results[i] = jsonapi.AckResult{TransactionID: o.TransactionID, Error: o.Err, Queue: o.Queue, Partition: o.Partition,
			LeaseReleased: o.LeaseReleased, DLQ: o.DeadLettered}
	}
	return jsonapi.StatusOK, jsonapi.AppendAckResults(make([]byte, 0, 32+len(acks)*200), results)
}

// ServeExtend extends a lease (jsonapi.DecodeLease; err is the
// decoding's).
func (c *Consumer) ServeExtend(ctx context.Context, tenant tenancy.TenantID, req jsonapi.LeaseRequest, err error) (int, []byte) {
	if err != nil {
		return jsonapi.StatusBadRequest, jsonapi.ErrorBody(err.Error())
	}
	at, ok, err := c.Extend(ctx, tenant, req.Lease, req.Seconds)
	if err != nil {
		return jsonapi.StatusServiceUnavailable, jsonapi.ErrorBody(err.Error())
	}
	return jsonapi.StatusOK, jsonapi.AppendLeaseAnswer(nil, req.LeaseID, at, ok)
}

// ServeDeadLetters lists a queue's dead letters (err is the decoding's).
func (c *Consumer) ServeDeadLetters(ctx context.Context, tenant tenancy.TenantID, req jsonapi.DeadLettersRequest, err error) (int, []byte) {
	if err == nil {
		err = req.Validate()
	}
	if err != nil {
		return jsonapi.StatusBadRequest, jsonapi.ErrorBody(err.Error())
	}
	page, err := c.DeadLetters(ctx, tenant, req.Queue, req.ConsumerGroup, req.Limit, req.Offset)
	if err != nil {
		var bad errUnreadable
		if asUnreadable(err, &bad) {
			return jsonapi.StatusInternalServerError, jsonapi.ErrorBody(err.Error())
		}
		return jsonapi.StatusServiceUnavailable, jsonapi.ErrorBody(err.Error())
	}
	return jsonapi.StatusOK, jsonapi.AppendDeadLetters(nil, page.Letters, req.Limit, req.Offset, page.Total)
}
