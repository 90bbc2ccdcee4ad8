package readside

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

// The read side's tests are inside the package: marks and the park/wake
// loop are unexported, and what they decide (which partitions a pop tries,
// when a parked look looks again) is only visible there. PostgreSQL and
// NATS are real.
func TestMain(m *testing.M) { testenv.Main(m) }

// newDB opens a migrated queen database of the test's own.
func newDB(t testing.TB) *pgwire.DB { return testkit.OpenDB(t, testenv.NewDatabase(t), 8) }

// push commits one segment of a message per transactionId to a partition
// of the default tenant and returns its first offset.
func push(t testing.TB, db *pgwire.DB, queue, partition string, txids ...string) int64 {
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

func setOption(t testing.TB, db *pgwire.DB, queue, key string, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	if _, err := db.ConfigureQueue(context.Background(), [16]byte{}, queue, pgwire.QueueUpdate{Other: map[string]json.RawMessage{key: b}}); err != nil {
		t.Fatal(err)
	}
}

// startReads starts a Reads on db, stopped when the test ends.
func startReads(t testing.TB, cfg Config) *Reads {
	t.Helper()
	r, err := New(cfg)
	return testkit.Started(t, r, err)
}

func txids(msgs []pgwire.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Frame.TransactionID
	}
	return out
}
