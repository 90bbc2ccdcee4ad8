package consume

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/push"
	"github.com/queenbridge/queenbridge/segment"
)

// Dead letters sent again (POST /api/v1/dlq/requeue, docs/console.md). On
// the log a requeue is a new push of the dead letter's message: its
// payload as its producer sent it (decrypted, then sealed again as a
// push's is, by the push room's preparation), to the same queue and
// partition, at a new offset, so every consumer group of the queue gets
// it. Its transactionId is derived from the message (RequeueTxID), so a
// repeat is deduplicated like any push. The push and the removal of the
// dead-letter entries are one PostgreSQL transaction (pgwire.Requeue);
// after COMMIT the push is announced as a committed one (hot tail, marks,
// MESSAGE_AVAILABLE), so parked pops wake.
//
// A message several groups dead-lettered is pushed once, and every
// selected group's dead letter of it goes. One pushed already by an
// earlier requeue (another group's dead letter of it, say) is a duplicate
// inside the queue's window: it is not pushed again, its dead letters go,
// and the answer names the earlier copy's offset.

// requeueNamespace is the UUID namespace of the derived transactionIds.
var requeueNamespace = uuid.MustParse("6f1d3c5e-2b8a-4f0e-9c71-d0a4e5b6c7f8")

// RequeueTxID is the transactionId of the requeue of the message stored at
// offset of partition pid: a name-based UUID of the two, the same on every
// bridge and every try, and no client's transactionId by chance.
func RequeueTxID(pid, offset int64) string {
	return uuid.NewSHA1(requeueNamespace, []byte(strconv.FormatInt(pid, 10)+"/"+strconv.FormatInt(offset, 10))).String()
}

// errRequeueMaintenance answers a requeue in maintenance mode.
const errRequeueMaintenance = "maintenance mode is on: dead letters are not requeued while nothing may reach PostgreSQL; send it again once it ends"

// requeueTries bounds the reads of the dead letters when a concurrent
// change removed some of them between the read and the write.
const requeueTries = 3

// ServeRequeue runs a decoded requeue (jsonapi.DecodeRequeue; a body that
// does not decode is answered 400 before it) and answers it: 200 with
// what was requeued, 404 for an unknown queue or (one message) no such
// dead letter, 503 when it was not attempted (maintenance mode, shutting
// down, no connection) or its outcome is unknown (a resend is safe: the
// push is deduplicated and a removed dead letter is not requeued again).
func (c *Consumer) ServeRequeue(ctx context.Context, tenant tenancy.TenantID, req jsonapi.RequeueRequest) (int, []byte) {
	switch {
	case c.cfg.Stopping():
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, push.ErrStopping)
	case c.cfg.Maintenance():
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, errRequeueMaintenance)
	case c.cfg.Pushes == nil:
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, "dead letters are not requeued here")
	}
	// As a transaction, once sent it runs to its end (bounded by the
	// statement timeout) even if its client went away.
	msgs, more, err := c.Requeue(context.WithoutCancel(ctx), tenant, req)
	var unreadable errUnreadable
	switch {
	case errors.Is(err, errQueueNotFound):
		return jsonapi.StatusNotFound, jsonapi.AppendError(nil, "Queue not found")
	case errors.Is(err, errNoDeadLetter):
		return jsonapi.StatusNotFound, jsonapi.AppendError(nil, fmt.Sprintf("no dead letter of transactionId %q in partition %d whose message is still stored",
			req.TransactionID, req.PartitionID))
	case asUnreadable(err, &unreadable):
		return jsonapi.StatusInternalServerError, jsonapi.AppendError(nil, err.Error())
	case errors.Is(err, pgwire.ErrRequeueGone):
		return jsonapi.StatusConflict, jsonapi.AppendError(nil, "the dead letters changed while they were requeued; send it again")
	case err != nil && (pgwire.IsUnavailable(err) || pgwire.IsTimeout(err) || pgwire.IsOutcomeUnknown(err)):
		return jsonapi.StatusServiceUnavailable, jsonapi.AppendError(nil, err.Error())
	case err != nil:
		return jsonapi.StatusInternalServerError, jsonapi.AppendError(nil, err.Error())
	}
	return jsonapi.StatusOK, jsonapi.AppendRequeued(nil, msgs, more)
}

var (
	errQueueNotFound = errors.New("consume: no such queue")
	errNoDeadLetter  = errors.New("consume: no such dead letter")
)

// requeueMsg is one message to push again and its dead letters.
type requeueMsg struct {
	letter pgwire.DeadLetter // the oldest of its dead letters
	groups []string
	ids    []int64
	txid   string // the new push's
}

// Requeue sends the dead letters req names again: the oldest RequeueMax of
// them, whose messages are still stored; more says there are others.
func (c *Consumer) Requeue(ctx context.Context, tenant tenancy.TenantID, req jsonapi.RequeueRequest) (out []jsonapi.Requeued, more bool, err error) {
	sel := pgwire.RequeueSelect{Tenant: tenant, Queue: req.Queue, Group: req.ConsumerGroup, PartitionID: req.PartitionID,
		TransactionID: req.TransactionID, Limit: c.cfg.RequeueMax}
	for try := 1; ; try++ {
		dls, m, found, err := c.cfg.DB.RequeueCandidates(ctx, sel)
		switch {
		case err != nil:
			return nil, false, err
		case !found:
			return nil, false, errQueueNotFound
		}
		msgs := byMessage(dls)
		if len(msgs) == 0 {
			if req.One() {
				return nil, false, errNoDeadLetter
			}
			return []jsonapi.Requeued{}, m, nil
		}
		out, err = c.requeue(ctx, tenant, msgs)
		if errors.Is(err, pgwire.ErrRequeueGone) && try < requeueTries {
			continue // another requeue or a delete took some: read again
		}
		return out, m, err
	}
}

// byMessage gathers dead letters by message, oldest message first: one
// push per message, whichever groups dead-lettered it. Letters whose
// message retention removed meanwhile are left.
func byMessage(dls []pgwire.DeadLetter) []*requeueMsg {
	type key struct{ pid, offset int64 }
	seen := map[key]*requeueMsg{}
	var out []*requeueMsg
	for _, d := range dls {
		if !d.Found {
			continue
		}
		k := key{d.PartitionID, d.Offset}
		m := seen[k]
		if m == nil {
			m = &requeueMsg{letter: d, txid: RequeueTxID(d.PartitionID, d.Offset)}
			seen[k] = m
			out = append(out, m)
		}
		m.groups = append(m.groups, d.Group)
		m.ids = append(m.ids, d.ID)
	}
	return out
}

// requeue writes msgs: their pushes and the removal of their dead letters,
// in one transaction. Messages whose push is a duplicate of an earlier
// requeue's are taken out of the pushes and the rest written again (their
// dead letters still go). Each such round takes at least one message out,
// so there are at most as many as messages.
func (c *Consumer) requeue(ctx context.Context, tenant tenancy.TenantID, msgs []*requeueMsg) ([]jsonapi.Requeued, error) {
	var dead []int64
	for _, m := range msgs {
		dead = append(dead, m.ids...)
	}
	out := make([]jsonapi.Requeued, len(msgs))
	pushing := make([]int, len(msgs)) // indexes of msgs still to push
	for i, m := range msgs {
		pushing[i] = i
		d := &m.letter
		out[i] = jsonapi.Requeued{TransactionID: d.TransactionID, NewTransactionID: m.txid, PartitionID: d.PartitionID, Partition: d.Partition, Groups: m.groups}
	}
	for {
		items := make([]jsonapi.Item, len(pushing))
		for k, i := range pushing {
			d := &msgs[i].letter
			f := &d.Message.Frame
			plain, err := c.cfg.Payloads.Plain(tenant, d.Queue, d.Partition, f.Flags, f.Payload)
			if err != nil {
				return nil, errUnreadable{fmt.Errorf("dead letter %d: %w", d.ID, err)}
			}
			items[k] = jsonapi.Item{Queue: d.Queue, Partition: d.Partition, TransactionID: msgs[i].txid, TraceID: f.TraceID,
				Payload: plain, Encoded: f.Flags&segment.FlagBase64 != 0, Subject: f.Subject, Header: f.Header}
		}
		var prep push.Prepared
		if len(items) > 0 {
			var err error
			if prep, err = c.cfg.Pushes.PrepareTxn(ctx, tenant, items); err != nil {
				return nil, fmt.Errorf("consume: requeue: %w", err)
			}
		}
		res, err := c.cfg.DB.Requeue(ctx, pgwire.RequeueRequest{Tenant: tenant, Writes: prep.Writes, DeadLetters: dead})
		var dup *pgwire.RequeueDuplicateError
		if errors.As(err, &dup) {
			keep := dropDuplicates(prep, dup, pushing, out)
			if len(keep) == len(pushing) {
				return nil, fmt.Errorf("consume: requeue: the duplicates named are not among the pushes: %w", err)
			}
			pushing = keep
			continue
		}
		if err != nil {
			return nil, err
		}
		for k, i := range pushing {
			it := prep.Items[k]
			out[i].Offset = res[it.Write].BaseOffset + int64(it.Frame)
		}
		c.announcePushes(tenant, prep, res)
		return out, nil
	}
}

// dropDuplicates takes the messages whose push was a duplicate out of
// pushing, noting the stored copy's offset in their answers.
func dropDuplicates(prep push.Prepared, dup *pgwire.RequeueDuplicateError, pushing []int, out []jsonapi.Requeued) []int {
	drop := map[int]bool{}
	for _, f := range dup.Frames {
		for k, it := range prep.Items {
			if it.Write == f.Write && it.Frame == f.Frame {
				i := pushing[k]
				out[i].Offset, out[i].Already = f.Offset, true
				drop[k] = true
			}
		}
	}
	var keep []int
	for k, i := range pushing {
		if !drop[k] {
			keep = append(keep, i)
		}
	}
	return keep
}
