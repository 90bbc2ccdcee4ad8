package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// The pipeline mode (-consumers N -pipeline-to PREFIX): the consume mode,
// but each consumer forwards its popped batch instead of acknowledging it:
// one transaction per batch pushes every message to queue
// PREFIX<n> (the same n as its source queue <queue-prefix><n>, partition
// named after the source partition's id, the payload as popped) and
// acknowledges the batch on the source, all or nothing
// (docs/transactions.md). "consumed" is then what was forwarded, and the
// report adds the forwarded items/s and the CPU per forwarded item.

// forwardQueue is where the pipeline forwards what it pops from queue.
func forwardQueue(o options, queue string) string {
	return o.pipelineTo + strings.TrimPrefix(queue, o.queuePrefix)
}

// forward sends one transaction: p's messages pushed to queue to, and
// acknowledged for the consumer's group. It answers how many it forwarded
// (all or none).
func (c *consumer) forward(to string, p *poppedWire) (int, error) {
	body := appendForwardBody(c.ackBody[:0], c.group, to, p)
	c.ackBody = body
	answer, refused, err := c.request(".v1.transaction", "/api/v1/transaction", body)
	if err != nil {
		return 0, err
	}
	if refused != nil {
		return 0, fmt.Errorf("transaction: %w", refused)
	}
	// A transaction that did not commit lists no results, and its
	// answer no "success":true.
	if !bytes.Contains(answer, []byte(`"success":true`)) {
		return 0, fmt.Errorf("transaction not committed: %.300s", answer)
	}
	return len(p.Messages), nil
}

// appendForwardBody appends the transaction that forwards p to queue to:
// one push operation with an item per message, then one ack per message.
func appendForwardBody(body []byte, group, to string, p *poppedWire) []byte {
	body = append(body, `{"operations":[{"type":"push","items":[`...)
	for i, m := range p.Messages {
		if i > 0 {
			body = append(body, ',')
		}
		body = strconv.AppendQuote(append(body, `{"queue":`...), to)
		body = strconv.AppendQuote(append(body, `,"partition":`...), "p"+m.PartitionID)
		body = append(append(body, `,"payload":`...), m.Data...)
		body = append(body, '}')
	}
	body = append(body, `]}`...)
	for _, m := range p.Messages {
		body = strconv.AppendQuote(append(body, `,{"type":"ack","transactionId":`...), m.TransactionID)
		body = strconv.AppendQuote(append(body, `,"partitionId":`...), m.PartitionID)
		body = strconv.AppendQuote(append(body, `,"leaseId":`...), m.LeaseID)
		body = strconv.AppendQuote(append(body, `,"consumerGroup":`...), group)
		body = append(body, '}')
	}
	return append(body, `]}`...)
}
