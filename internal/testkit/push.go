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
	frames := make([]segment.Frame, len(txids))
	for i, tx := range txids {
		frames[i] = segment.Frame{ID: uuid.Must(uuid.NewV7()), TransactionID: tx, Payload: []byte(fmt.Sprintf(`{"tx":%q}`, tx))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := db.PushBundle(ctx, []segment.Write{{Queue: queue, Partition: partition, Count: int32(len(frames)),
		Hashes: segment.AppendHashes(nil, frames), Blob: segment.Pack(nil, frames)}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Status != segment.Queued {
		t.Fatalf("push to %s/%s: %v %v", queue, partition, res[0].Status, res[0].Err)
	}
	return res[0].BaseOffset
}

// TxIDs are the messages' transactionIds, in order.
func TxIDs(msgs []pgwire.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Frame.TransactionID
	}
	return out
}
