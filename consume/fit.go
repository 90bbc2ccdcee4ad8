package consume

import (
	"context"
	"fmt"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/pgwire"
)

// ErrTooLarge is wrapped by the refusal of a pop whose answer a transport
// cannot carry.
var ErrTooLarge = fmt.Errorf("answer larger than the transport carries")

// fitAnswer keeps the partitions of a pop whose answer fits maxBytes
// (estimated as ServePop sizes its buffer, which stored payloads and the
// names bound from above). The claim already cut each partition's batch to
// the bound, at least one message each; what can still pass it is a
// message larger than the bound alone, or a further partition's first
// one. Partitions that do not fit are released (the next pop gets them);
// when the first does not, nothing is delivered: everything is released and
// the error names the message, its size and the bound.
// claimAcked says the claim itself moved the cursor (auto-ack).
func (c *Consumer) fitAnswer(ctx context.Context, tenant tenancy.TenantID, req jsonapi.PopRequest, claimAcked bool, got Popped, maxBytes int64) (Popped, error) {
	lease := ""
	if !req.AutoAck {
		lease = string(jsonapi.AppendUUID(nil, got.Lease))
	}
	size := int64(len(jsonapi.OpenPop(nil, &jsonapi.PopHead{Queue: req.Queue, Partition: got.Parts[0].Partition,
		PartitionID: got.Parts[0].PartitionID, Lease: lease, Group: req.ConsumerGroup, Claimed: len(got.Parts)}))) + 2
	for k, p := range got.Parts {
		for i := range p.Messages {
			size += 1 + int64(jsonapi.PoppedLen(poppedOf(p, i), lease, req.ConsumerGroup))
		}
		if size <= maxBytes {
			continue
		}
		if k > 0 { // deliver the partitions before it
			_ = c.releaseParts(ctx, tenant, req.Queue, req.ConsumerGroup, claimAcked, got, got.Parts[k:])
			got.Parts = got.Parts[:k]
			return got, nil
		}
		return got, c.refuseTooLarge(ctx, tenant, req, claimAcked, got, lease, maxBytes)
	}
	return got, nil
}

// refuseTooLarge releases everything a pop claimed and names the largest
// message of its first partition.
func (c *Consumer) refuseTooLarge(ctx context.Context, tenant tenancy.TenantID, req jsonapi.PopRequest, claimAcked bool, got Popped, lease string, maxBytes int64) error {
	c.tooLarge.Add(1)
	rerr := c.releaseParts(ctx, tenant, req.Queue, req.ConsumerGroup, claimAcked, got, got.Parts)
	p := got.Parts[0]
	big, bigLen := 0, 0
	for i := range p.Messages {
		if n := jsonapi.PoppedLen(poppedOf(p, i), lease, req.ConsumerGroup); n > bigLen {
			big, bigLen = i, n
		}
	}
	m := &p.Messages[big]
	err := fmt.Errorf("%w: message %q at offset %d of queue %s, partition %s, is %d bytes (payload %d bytes) and a NATS answer carries at most %d bytes here (max_payload): pop it over HTTP",
		ErrTooLarge, m.Frame.TransactionID, m.Offset, req.Queue, p.Partition, bigLen, len(m.Frame.Payload), maxBytes)
	if rerr != nil {
		err = fmt.Errorf("%w; releasing its claim failed: %v", err, rerr)
	}
	return err
}

func poppedOf(p pgwire.PopResult, i int) *jsonapi.PoppedMessage {
	m := &p.Messages[i]
	return &jsonapi.PoppedMessage{TransactionID: m.Frame.TransactionID, TraceID: m.Frame.TraceID, Payload: m.Frame.Payload, Partition: p.Partition}
}
