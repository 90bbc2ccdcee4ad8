package consume

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/cursors"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/readside"
	"github.com/queenbridge/queenbridge/segment"
)

// plainPayloads hands payloads back as stored (no encrypted queues).
type plainPayloads struct{}

func (plainPayloads) Plain(_ tenancy.TenantID, _, _ string, _ uint8, stored []byte) ([]byte, error) {
	return stored, nil
}

func (plainPayloads) Sealed(context.Context, tenancy.TenantID, string) (bool, error) {
	return false, nil
}

// startSides starts a read side over db, stopped when the test ends, and
// marks that hear its announcements, as the bridge wires them.
func startSides(t *testing.T, db *pgwire.DB) (*readside.Reads, *cursors.Marks) {
	t.Helper()
	marks, err := cursors.NewMarks(db)
	if err != nil {
		t.Fatal(err)
	}
	reads, err := readside.New(readside.Config{DB: db, Listener: marks})
	return testkit.Started(t, reads, err), marks
}

// segmentOf is frames as one segment of partition, as fusion packs them.
func segmentOf(queue, partition string, frames []segment.Frame) segment.Write {
	return segment.Write{Queue: queue, Partition: partition, Count: int32(len(frames)),
		Hashes: segment.AppendHashes(nil, frames), Blob: segment.Pack(nil, frames)}
}

// A pop of any partition and the ack of its whole batch, through
// PostgreSQL and the read side: the group's cursor moves past the batch,
// the lease is released, and the next pop finds nothing.
func TestPopAndAckThroughPostgreSQL(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := testkit.OpenDB(t, testenv.NewDatabase(t), 4)
	frames := make([]segment.Frame, 3)
	for i := range frames {
		frames[i] = segment.Frame{ID: uuid.Must(uuid.NewV7()), TransactionID: fmt.Sprint("tx", i), Payload: []byte(fmt.Sprintf(`{"n":%d}`, i))}
	}
	res, err := db.PushBundle(ctx, []segment.Write{segmentOf("q", "p", frames)})
	if err != nil || res[0].Status != segment.Queued {
		t.Fatalf("push: %+v, %v", res, err)
	}
	reads, marks := startSides(t, db)
	c, err := New(Config{DB: db, Reads: reads, Marks: marks, Payloads: plainPayloads{}})
	if err != nil {
		t.Fatal(err)
	}
	tenant, group := [16]byte{}, pgwire.QueueMode
	req := PopRequest{Queue: "q", Group: group, Batch: 10, Partitions: 1, SubscriptionMode: "all"}
	got, err := c.Pop(ctx, tenant, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Parts) != 1 || got.Parts[0].Partition != "p" {
		t.Fatalf("popped %+v", got)
	}
	var acks []Ack
	var txs []string
	for _, m := range got.Parts[0].Messages {
		txs = append(txs, m.Frame.TransactionID)
		acks = append(acks, Ack{TransactionID: m.Frame.TransactionID, PartitionID: got.Parts[0].PartitionID, Group: group, Lease: &got.Lease, Status: Completed})
	}
	if !slices.Equal(txs, []string{"tx0", "tx1", "tx2"}) {
		t.Fatalf("popped %v", txs)
	}
	for i, o := range c.Ack(ctx, tenant, acks) {
		if o.Err != "" || !o.LeaseReleased || o.Queue != "q" || o.Partition != "p" || o.TransactionID != txs[i] {
			t.Errorf("ack %d: %+v", i, o)
		}
	}
	var cursor, to int64
	var leased bool
	if err := db.Pool().QueryRow(ctx, `SELECT cursor_offset, delivered_to, lease_id IS NOT NULL FROM queen.consumer_cursors
		WHERE partition_id = $1 AND consumer_group = $2`, got.Parts[0].PartitionID, group).Scan(&cursor, &to, &leased); err != nil {
		t.Fatal(err)
	}
	if cursor != got.Parts[0].To || cursor != got.Parts[0].Messages[2].Offset || leased {
		t.Errorf("cursor %d (delivered to %d), lease held %v after acking the batch up to %d", cursor, to, leased, got.Parts[0].To)
	}
	named := req
	named.Partition = "p" // claimed in the database whatever the marks say
	for _, r := range []PopRequest{req, named} {
		if again, err := c.Pop(ctx, tenant, r); err != nil || again.Count() != 0 {
			t.Errorf("a pop of %q after the ack: %+v, %v", r.Partition, again, err)
		}
	}
	if s := c.Stats(); s.Pops != 3 || s.Delivered != 3 {
		t.Errorf("stats %+v", s)
	}
}
