package testkit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

// PushSegment commits one segment of a message per transactionId (payload
// {"tx": <id>}) to a partition of the default tenant, as one bundle call,
// and returns its first offset.
func PushSegment(t testing.TB, db *pgwire.DB, queue, partition string, txids ...string) int64 {
	t.Helper()
	res := Push(t, db, Write(queue, partition, txids...))
	if res[0].Status != segment.Queued {
		t.Fatalf("push to %s/%s: %v %v", queue, partition, res[0].Status, res[0].Err)
	}
	return res[0].BaseOffset
}

// Write builds a segment of one frame per transactionId (payload {"tx":
// <id>}) for a partition of the default tenant.
func Write(queue, partition string, txids ...string) segment.Write {
	frames := make([]segment.Frame, len(txids))
	for i, tx := range txids {
		frames[i] = segment.Frame{ID: uuid.Must(uuid.NewV7()), TransactionID: tx, Payload: []byte(fmt.Sprintf(`{"tx":%q}`, tx))}
	}
	return segment.Write{Queue: queue, Partition: partition, Count: int32(len(frames)),
		Hashes: segment.AppendHashes(nil, frames), Blob: segment.Pack(nil, frames)}
}

// Push runs one bundle call of writes and answers its results, one per
// write; it fails the test on an error.
func Push(t testing.TB, db *pgwire.DB, writes ...segment.Write) []segment.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := db.PushBundle(ctx, writes)
	if err != nil {
		t.Fatalf("PushBundle: %v", err)
	}
	if len(res) != len(writes) {
		t.Fatalf("%d results for %d writes", len(res), len(writes))
	}
	return res
}

// TxIDs are the messages' transactionIds, in order.
func TxIDs(msgs []pgwire.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Frame.TransactionID
	}
	return out
}

// Completed are acknowledgements of the transactionIds as completed.
func Completed(ids ...string) []pgwire.AckItem {
	out := make([]pgwire.AckItem, len(ids))
	for i, id := range ids {
		out[i] = pgwire.AckItem{TransactionID: id}
	}
	return out
}
