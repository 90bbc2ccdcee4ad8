package consume

import (
	"context"

	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/readside"
)

// popOne pops one partition: from the hot tail when this bridge holds the
// segments after the group's cursor (one claim, no segment read), else
// through the database's pop. Either way it notes the cursor it saw, so
// that the next pop can be served from memory.
func (c *Consumer) popOne(ctx context.Context, pr pgwire.PopRequest) (pgwire.PopResult, error) {
	t := c.cfg.Tail
	if t != nil && pr.PartitionID == 0 && pr.Partition != "" {
		if pid, ok := t.PartitionID(pr.Tenant, pr.Queue, pr.Partition); ok {
			pr.PartitionID = pid
		}
	}
	if t != nil && pr.PartitionID > 0 {
		if take, ok := t.Take(pr.PartitionID, pr.Group, pr.Batch); ok {
			msgs, err := tailMessages(&take, pr)
			if err == nil {
				var res pgwire.PopResult
				var claimed bool
				res, claimed, err = c.cfg.DB.PopTail(ctx, pr, pgwire.TailClaim{Cursor: take.Cursor, To: take.To, Count: take.Count,
					Hashes: take.Hashes, FirstEnd: take.FirstEnd})
				if err != nil {
					return res, err
				}
				if claimed {
					t.Note(true)
					res.Messages = msgs
					c.noteCursor(pr, res)
					return res, nil
				}
			}
			t.Note(false)
			t.SetCursor(pr.PartitionID, pr.Group, -1) // wrong, or unusable: learn it again
		}
	}
	res, err := c.cfg.DB.Pop(ctx, pr)
	if err == nil {
		c.noteCursor(pr, res)
	}
	return res, err
}

// noteCursor records the group's cursor a pop saw: after an auto-ack
// delivery its end, after a delivery under a lease the cursor it delivered
// after (an ack moves it: noteAcked), after an empty pop where it stands.
func (c *Consumer) noteCursor(pr pgwire.PopRequest, res pgwire.PopResult) {
	switch {
	case c.cfg.Tail == nil || res.PartitionID <= 0:
	case res.Status == pgwire.PopDelivered && pr.AutoAck:
		c.cfg.Tail.SetCursor(res.PartitionID, pr.Group, res.To)
	case res.Status == pgwire.PopDelivered || res.Status == pgwire.PopEmpty:
		c.cfg.Tail.SetCursor(res.PartitionID, pr.Group, res.Cursor)
	}
}

// noteAcked records the cursor an acknowledgement left.
func (c *Consumer) noteAcked(pid int64, group string, cursor int64) {
	c.cfg.Tail.SetCursor(pid, group, cursor)
}

// tailMessages decodes what a take delivers, cut at the request's byte
// bound (at least one message) as popDecode cuts what PostgreSQL answered;
// a cut take is shortened before it is claimed, so the claim records
// exactly what goes out.
func tailMessages(take *readside.TailTake, pr pgwire.PopRequest) ([]pgwire.Message, error) {
	msgs := make([]pgwire.Message, 0, take.Count)
	var cost int64
	for _, s := range take.Segments {
		frames, err := s.Frames()
		if err != nil {
			return nil, err
		}
		for k := range frames {
			off := s.Base + int64(k)
			if off <= take.Cursor || off > take.To {
				continue
			}
			cost += pgwire.PopCost(&frames[k], take.Partition, pr.Group)
			if pr.MaxBytes > 0 && len(msgs) > 0 && cost > pr.MaxBytes {
				take.Cut(len(msgs))
				return msgs, nil
			}
			msgs = append(msgs, pgwire.Message{Offset: off, Frame: frames[k], CreatedAt: s.CreatedAt})
		}
	}
	return msgs, nil
}
