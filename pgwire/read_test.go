package pgwire_test

import (
	"context"
	"errors"
	"testing"

	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/queenbridge/queenbridge/storage"
)

func TestReadMessagesFromAnOffset(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	push(t, db, write("q", "p", "a", "b"))
	push(t, db, write("q", "p", "c"))
	push(t, db, write("q", "p", "d", "e", "f"))
	msgs, err := db.ReadMessages(ctx, [16]byte{}, "q", "p", 2, 3, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"b", "c", "d"}
	if len(msgs) != 3 {
		t.Fatalf("%d messages", len(msgs))
	}
	for i, m := range msgs {
		if m.Offset != int64(i+2) || m.Frame.TransactionID != want[i] || string(m.Frame.Payload) != `{"tx":"`+want[i]+`"}` || m.CreatedAt.IsZero() {
			t.Fatalf("message %d: %+v", i, m)
		}
	}
	for _, tc := range []struct {
		q, p string
		from int64
	}{{"q", "p", 7}, {"q", "nope", 1}, {"nope", "p", 1}} {
		if msgs, err := db.ReadMessages(ctx, [16]byte{}, tc.q, tc.p, tc.from, 10, 1<<20); err != nil || len(msgs) != 0 {
			t.Fatalf("%+v: %d messages, %v", tc, len(msgs), err)
		}
	}
}

// Retention removes old segments and keeps newer ones; offsets go on; the
// transaction rows stay for the dedup window, so a repeat of a removed
// original is still found (and its segment is gone).
func TestRetentionStep(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	push(t, db, write("r", "p", "old1", "old2"))
	push(t, db, write("r", "p", "old3"))
	if _, err := db.ConfigureQueue(ctx, [16]byte{}, "r", storage.QueueUpdate{RetentionSeconds: ptr32(60), DedupWindowSeconds: ptr32(3600)}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool().Exec(ctx, `UPDATE queen.log_segments SET created_at = created_at - interval '2 minutes';
		UPDATE queen.log_txns SET created_at = created_at - interval '2 minutes'`); err != nil {
		t.Fatal(err)
	}
	push(t, db, write("r", "p", "new1"))
	res, err := db.RetentionStep(ctx, 16, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if res.Segments != 2 || res.Txns != 0 || res.Partitions != 1 {
		t.Fatalf("step %+v, want 2 segments, 0 transaction rows (inside the hour window)", res)
	}
	msgs, err := db.ReadMessages(ctx, [16]byte{}, "r", "p", 1, 10, 1<<20)
	if err != nil || len(msgs) != 1 || msgs[0].Offset != 4 || msgs[0].Frame.TransactionID != "new1" {
		t.Fatalf("after retention: %+v %v", msgs, err)
	}
	dup := push(t, db, write("r", "p", "old2"))[0]
	if dup.Status != segment.Duplicate || dup.Dups[0].Offset != 2 {
		t.Fatalf("a repeat of a removed original: %+v", dup)
	}
	if _, err := db.SegmentAt(ctx, dup.PartitionID, 2); !errors.Is(err, pgwire.ErrSegmentGone) {
		t.Fatalf("the original's segment: %v", err)
	}
	if r := push(t, db, write("r", "p", "new2"))[0]; r.BaseOffset != 5 {
		t.Fatalf("offsets must go on after retention: %+v", r)
	}
	// With a window shorter than the age, the transaction rows go too, and
	// txns_start moves past them.
	if _, err := db.ConfigureQueue(ctx, [16]byte{}, "r", storage.QueueUpdate{DedupWindowSeconds: ptr32(30)}); err != nil {
		t.Fatal(err)
	}
	if res, err := db.RetentionStep(ctx, 16, 1000); err != nil || res.Txns != 2 {
		t.Fatalf("second step %+v %v", res, err)
	}
	if start := count(t, db.Pool(), `SELECT txns_start FROM queen.log_partitions WHERE name = 'p'`); start != 4 {
		t.Fatalf("txns_start %d, want 4", start)
	}
}

func ptr32(v int32) *int32 { return &v }
