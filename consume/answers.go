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
//
// A pop that cannot deliver consumes nothing. A queue sealed under a key
// this bridge does not hold is refused (503) before anything is claimed.
// A payload that does not open after the claim releases the claim in the
// same request (release) and answers 500 naming where it is. An auto-ack
// pop of a queue whose payloads may be sealed claims under a lease like
// any pop, and acknowledges what it delivered only once the answer is
// rendered; a plain queue's auto-ack moves the cursor in the claim itself.
func (c *Consumer) ServePop(ctx context.Context, tenant tenancy.TenantID, req jsonapi.PopRequest, maxBytes int64) (int, []byte) {
	if err := req.Validate(); err != nil {
		return jsonapi.StatusBadRequest, jsonapi.AppendError(nil, err.Error())
	}
	if c.cfg.Maintenance() || c.cfg.PopMaintenance() {
		return jsonapi.StatusNoContent, nil // before the settings are looked up: nothing reaches PostgreSQL
	}
	sealed, err := c.cfg.Payloads.Sealed(ctx, tenant, req.Queue)
	if err != nil {
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, fmt.Sprintf("pop of queue %q refused, nothing was claimed: %v", req.Queue, err))
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
		return jsonapi.StatusBadRequest, jsonapi.AppendError(nil, err.Error())
	}
	defer ticket.finish()
	if ctx.Err() != nil { // its cancel came first, or its requester is gone
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, "the pop was cancelled before it ran: nothing claimed")
	}
	ackLater := req.AutoAck && sealed
	claimAcked := req.AutoAck && !ackLater // the claim itself moves the cursor
	got, err := c.Pop(ctx, tenant, PopRequest{Queue: req.Queue, Partition: req.Partition, Group: req.ConsumerGroup,
		Batch: req.Batch, Partitions: req.Partitions, AutoAck: claimAcked, SubscriptionMode: req.SubscriptionMode,
		SubscriptionFrom: req.From, Wait: wait, MaxBytes: maxBytes})
	if err != nil && len(got.Parts) == 0 {
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, err.Error())
	}
	if got.Count() == 0 {
		return jsonapi.StatusNoContent, nil
	}
	if maxBytes > 0 {
		if got, err = c.fitAnswer(ctx, tenant, req, claimAcked, got, maxBytes); err != nil {
			return jsonapi.StatusTooLarge, jsonapi.AppendError(nil, err.Error())
		}
	}
	if status, out, gone := c.requesterGone(ctx, tenant, req, claimAcked, got, ticket, expires > 0 && time.Since(start) >= expires); gone {
		return status, out
	}
	out, err := c.renderPop(tenant, req, got)
	if err != nil {
		if rerr := c.release(ctx, claimsOf(tenant, req.Queue, req.ConsumerGroup, claimAcked, got)); rerr != nil {
			return jsonapi.StatusInternalServerError, jsonapi.AppendError(nil, fmt.Sprintf("%v; handing the claim back failed too (%v)", err, rerr))
		}
		return jsonapi.StatusInternalServerError, jsonapi.AppendError(nil, fmt.Sprintf("%v; nothing was consumed, the claim is handed back", err))
	}
	if ackLater {
		return c.answerAcked(ctx, tenant, req, got, out)
	}
	return jsonapi.StatusOK, out
}

// answerAcked acknowledges what an auto-ack pop of a sealed queue
// delivered, now that its answer (out) is rendered, and answers what was
// acknowledged: the partitions whose acknowledgement failed are left out
// (still leased, delivered again when the lease ends), and with none
// acknowledged the pop delivers nothing (503).
func (c *Consumer) answerAcked(ctx context.Context, tenant tenancy.TenantID, req jsonapi.PopRequest, got Popped, out []byte) (int, []byte) {
	failed, err := c.settle(ctx, tenant, req.ConsumerGroup, got, Completed)
	if err == nil {
		return jsonapi.StatusOK, out
	}
	acked := Popped{Lease: got.Lease}
	for i, p := range got.Parts {
		if !failed[i] {
			acked.Parts = append(acked.Parts, p)
		}
	}
	if len(acked.Parts) == 0 {
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, fmt.Sprintf("auto-ack of queue %q: %v; nothing was delivered, the messages are delivered again when their lease ends", req.Queue, err))
	}
	out, err = c.renderPop(tenant, req, acked) // every payload opened once already
	if err != nil {
		return jsonapi.StatusInternalServerError, jsonapi.AppendError(nil, err.Error())
	}
	return jsonapi.StatusOK, out
}

// renderPop renders what a pop delivered, each payload as its producer
// sent it; a payload that does not open is an error naming its queue,
// partition and offset (and, through Plain, its key id).
func (c *Consumer) renderPop(tenant tenancy.TenantID, req jsonapi.PopRequest, got Popped) ([]byte, error) {
	lease := ""
	if !req.AutoAck {
		lease = string(jsonapi.AppendUUID(nil, got.Lease))
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
	out = jsonapi.OpenPop(out, &jsonapi.PopHead{Queue: req.Queue, Partition: first.Partition, PartitionID: first.PartitionID,
		Lease: lease, Group: req.ConsumerGroup, Claimed: len(got.Parts)})
	k := 0
	for _, p := range got.Parts {
		for i := range p.Messages {
			m := &p.Messages[i]
			payload, err := c.cfg.Payloads.Plain(tenant, req.Queue, p.Partition, m.Frame.Flags, m.Frame.Payload)
			if err != nil {
				return nil, fmt.Errorf("queue %q, partition %q: the message at offset %d does not open: %w", req.Queue, p.Partition, m.Offset, err)
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
	return jsonapi.ClosePop(out), nil
}

// ServeAck applies decoded acknowledgements (jsonapi.DecodeAck or
// DecodeAnyAck; the transport answers a body that does not decode) and
// answers one result per acknowledgement, in request order.
func (c *Consumer) ServeAck(ctx context.Context, tenant tenancy.TenantID, wire []jsonapi.Ack) (int, []byte) {
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

// ServeExtend extends a lease (jsonapi.DecodeLease decoded it).
func (c *Consumer) ServeExtend(ctx context.Context, tenant tenancy.TenantID, req jsonapi.LeaseRequest) (int, []byte) {
	at, ok, err := c.Extend(ctx, tenant, req.Lease, req.Seconds)
	if err != nil {
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, err.Error())
	}
	return jsonapi.StatusOK, jsonapi.AppendLeaseAnswer(nil, req.LeaseID, at, ok)
}

// ServeDeadLetters validates a decoded dead-letter query and lists the
// queue's dead letters.
func (c *Consumer) ServeDeadLetters(ctx context.Context, tenant tenancy.TenantID, req jsonapi.DeadLettersRequest) (int, []byte) {
	if err := req.Validate(); err != nil {
		return jsonapi.StatusBadRequest, jsonapi.AppendError(nil, err.Error())
	}
	page, err := c.DeadLetters(ctx, tenant, req.Queue, req.ConsumerGroup, req.Limit, req.Offset)
	if err != nil {
		var bad errUnreadable
		if asUnreadable(err, &bad) {
			return jsonapi.StatusInternalServerError, jsonapi.AppendError(nil, err.Error())
		}
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, err.Error())
	}
	return jsonapi.StatusOK, jsonapi.AppendDeadLetters(nil, page.Letters, req.Limit, req.Offset, page.Total)
}
