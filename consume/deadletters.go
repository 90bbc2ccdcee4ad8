package consume

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/segment"
)

// DeadLetters is one page of a queue's dead letters, payloads as their
// producers sent them.
type DeadLetters struct {
	Letters []DeadLetterMessage
	Total   int64
}

// DeadLetterMessage is one dead letter; Found is false when retention has
// removed its message (then Payload is nil).
type DeadLetterMessage struct {
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
	Payload       []byte
	Encoded       bool // the payload is the base64 string of a body that was not JSON
	CreatedAt     time.Time
	FailedAt      time.Time
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
	out := DeadLetters{Letters: make([]DeadLetterMessage, len(dls)), Total: total}
	for i, d := range dls {
		m := DeadLetterMessage{Found: d.Found, TransactionID: d.TransactionID, PartitionID: d.PartitionID, Queue: d.Queue,
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
