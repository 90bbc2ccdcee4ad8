package consume

import (
	"context"
	"errors"
	"fmt"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/segment"
)

// DeadLetters is one page of a queue's dead letters, payloads as their
// producers sent them, each as the wire carries it (a dead letter is a
// record with nothing of the room's own to add).
type DeadLetters struct {
	Letters []jsonapi.DeadLetter
	Total   int64
}

// errUnreadable is a stored payload this bridge cannot turn back into what
// was sent (an encrypted queue without the key): the data is there, so it
// is not the database's failure.
type errUnreadable struct{ err error }

func (e errUnreadable) Error() string { return e.err.Error() }
func (e errUnreadable) Unwrap() error { return e.err }

func asUnreadable(err error, target *errUnreadable) bool { return errors.As(err, target) }

// DeadLetters lists a queue's dead letters (group "": every group), oldest
// first, with the total count.
func (c *Consumer) DeadLetters(ctx context.Context, tenant tenancy.TenantID, queue, group string, limit, offset int) (DeadLetters, error) {
	dls, total, err := c.cfg.DB.DeadLetters(ctx, tenant, queue, group, limit, offset)
	if err != nil {
		return DeadLetters{}, err
	}
	out := DeadLetters{Letters: make([]jsonapi.DeadLetter, len(dls)), Total: total}
	for i, d := range dls {
		m := jsonapi.DeadLetter{Found: d.Found, TransactionID: d.TransactionID, PartitionID: d.PartitionID, Queue: d.Queue,
			Partition: d.Partition, Group: d.Group, Error: d.Error, RetryCount: d.RetryCount, Offset: d.Offset, FailedAt: d.FailedAt}
		if d.Found {
			f := &d.Message.Frame
			m.ID, m.CreatedAt, m.Encoded = f.ID, d.Message.CreatedAt, f.Flags&segment.FlagBase64 != 0
			if m.Payload, err = c.cfg.Payloads.Plain(tenant, d.Queue, d.Partition, f.Flags, f.Payload); err != nil {
				return DeadLetters{}, errUnreadable{fmt.Errorf("dead letter %d: %w", d.ID, err)}
			}
		}
		out.Letters[i] = m
	}
	return out, nil
}
