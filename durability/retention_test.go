package durability_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/durability"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/queenbridge/queenbridge/storage"
)

// pushSegments commits n segments of one message each to a partition.
func pushSegments(t testing.TB, db *pgwire.DB, queue, partition string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		fs := frames(uuid.NewString())
		if _, err := db.PushBundle(context.Background(), []segment.Write{{Queue: queue, Partition: partition, Count: 1,
			Hashes: segment.AppendHashes(nil, fs), Blob: segment.Pack(nil, fs)}}); err != nil {
			t.Fatal(err)
		}
	}
}

// The retention ticks remove the segments past their queue's retention,
// count them, and leave the rest.
func TestRetentionTicks(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	sixty := int32(60)
	for _, q := range []string{"old", "young"} {
		if _, err := db.ConfigureQueue(ctx, [16]byte{}, q, storage.QueueUpdate{RetentionSeconds: &sixty}); err != nil {
			t.Fatal(err)
		}
	}
	pushSegments(t, db, "old", "p1", 3)
	pushSegments(t, db, "old", "p2", 2)
	pushSegments(t, db, "young", "p", 2)
	if _, err := db.Pool().Exec(ctx, `UPDATE queen.log_segments s SET created_at = s.created_at - interval '2 minutes'
		FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE p.id = s.partition_id AND q.name = 'old'`); err != nil {
		t.Fatal(err)
	}
	k := startKeeper(t, durability.Config{DB: db, Fusion: startFusion(t, db), MaintenancePoll: time.Hour, RetentionInterval: 10 * time.Millisecond})
	testkit.WaitFor(t, "retention to remove old's segments", time.Minute, func() bool { return k.Stats().RetainedSegments >= 5 })
	if n := k.Stats().RetainedSegments; n != 5 {
		t.Fatalf("%d segments counted removed, want 5", n)
	}
	left := `SELECT count(*) FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id
		JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1`
	if n := count(t, db, left, "old"); n != 0 {
		t.Fatalf("old keeps %d segments", n)
	}
	if n := count(t, db, left, "young"); n != 2 {
		t.Fatalf("young keeps %d segments, want 2", n)
	}
}
