package push

import (
	"context"
	"fmt"
	"math"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/segment"
)

// A transaction's pushes (Queen's transaction wire) are prepared here as a
// push's are, by the same code (prepare): ids minted, transactionIds
// resolved, payloads of encrypted queues sealed, the items grouped by
// partition. What differs is what follows: they are not submitted to
// fusion, forwarded or spooled; the consume room writes them, with the
// transaction's acknowledgements, in one PostgreSQL transaction. And a
// repeat inside the request is not a follower but an error, which aborts
// the transaction.

// Prepared is a transaction's pushes, ready to be written.
type Prepared struct {
	// Writes are the segments, one per partition, in the order the
	// partitions first appear: the hash blob and the payload blob packed,
	// Verified 0 (probe the window) where a frame carries the client's
	// transactionId, NoProbe where every one was minted here.
	Writes []segment.Write
	// Items has one entry per pushed item, in request order.
	Items []PreparedItem
}

// PreparedItem is where one pushed item went.
type PreparedItem struct {
	ID            [16]byte
	TransactionID string // the client's, or the id
	Write, Frame  int    // its segment (index of Writes) and its place in it
}

// NoProbe is the Verified of a segment whose transactionIds were all minted
// for this request (pgwire.NoProbe, which this room does not import):
// nothing stored can repeat them.
const NoProbe = math.MaxInt64

// RepeatError is an item that repeats an earlier one of the same request:
// same queue, partition and transactionId.
type RepeatError struct {
	Index, First  int // the items' indexes
	TransactionID string
	Queue         string
	Partition     string
}

func (e *RepeatError) Error() string {
	return fmt.Sprintf("item %d repeats item %d: transactionId %q in %s/%s", e.Index, e.First, e.TransactionID, e.Queue, e.Partition)
}

// ItemError is an item that cannot be written (its queue's encryption
// without a key, say).
type ItemError struct {
	Index int
	Err   string
}

func (e *ItemError) Error() string { return fmt.Sprintf("item %d: %s", e.Index, e.Err) }

// PrepareTxn prepares a transaction's pushes for tenant. It returns a
// *RepeatError or an *ItemError for the first item (in request order) that
// cannot be written as the transaction asks; nothing has been written then.
func (p *Pusher) PrepareTxn(ctx context.Context, tenant tenancy.TenantID, items []jsonapi.Item) (Prepared, error) {
	c := &pushCall{p: p, tenant: tenant, items: items, st: make([]itemState, len(items))}
	groups := c.prepare(ctx)
	for i := range c.st {
		st := &c.st[i]
		if lead := int(st.leader); lead != i {
			return Prepared{}, &RepeatError{Index: i, First: lead, TransactionID: st.txid, Queue: items[i].Queue, Partition: items[i].Partition}
		}
		if st.result.Status == jsonapi.StatusFailed {
			return Prepared{}, &ItemError{Index: i, Err: st.result.Error}
		}
	}
	out := Prepared{Writes: make([]segment.Write, len(groups)), Items: make([]PreparedItem, len(items))}
	for k, g := range groups {
		w := segment.Write{Tenant: tenant, Queue: g.queue, Partition: g.partition, Count: int32(len(g.frames)),
			Hashes: segment.AppendHashes(make([]byte, 0, len(g.frames)*segment.HashSize), g.frames),
			Blob:   segment.Pack(nil, g.frames), Verified: NoProbe}
		if g.minted == nil || containsFalse(g.minted) {
			w.Verified = 0 // a client's transactionId: probe the window
		}
		out.Writes[k] = w
		for j, idx := range g.items {
			out.Items[idx] = PreparedItem{ID: c.st[idx].id, TransactionID: c.st[idx].txid, Write: k, Frame: j}
		}
	}
	return out, nil
}

func containsFalse(bs []bool) bool {
	for _, b := range bs {
		if !b {
			return true
		}
	}
	return false
}
