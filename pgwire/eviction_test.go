package pgwire_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/storage"
)

// Eviction (retentionEnabled with maxWaitTimeSeconds): 100 messages left
// unconsumed past the queue's maxWaitTimeSeconds are gone for every group,
// whatever retainUnconsumed or a longer retentionSeconds say; younger
// segments stay, and a queue that sets maxWaitTimeSeconds without
// retentionEnabled keeps everything. A cursor behind the evicted range
// skips it (the next push is the next delivery), and a dead letter of an
// evicted message stays listed without its data. Retention's step is
// driven directly over segments aged 15 s, so no test waits for them.
func TestEvictionAfterMaxWaitTime(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	queues := map[string]map[string]any{
		"evict":      {"retentionEnabled": true, "maxWaitTimeSeconds": 10, "retainUnconsumed": true},
		"evict-kept": {"retentionEnabled": true, "maxWaitTimeSeconds": 10},
		"not-on":     {"retentionEnabled": false, "maxWaitTimeSeconds": 10},
	}
	for q, opts := range queues {
		for s := 0; s < 10; s++ {
			var ids []string
			for k := 0; k < 10; k++ {
				ids = append(ids, fmt.Sprintf("%s-%d", q, s*10+k))
			}
			push(t, db, write(q, "old", ids...))
		}
		setOptions(t, db, q, opts)
	}
	if _, err := db.ConfigureQueue(ctx, [16]byte{}, "evict-kept", storage.QueueUpdate{RetentionSeconds: ptr32(3600)}); err != nil {
		t.Fatal(err)
	}
	// Group g consumes the first segment of evict/old (its cursor stays at
	// 10, behind what is evicted), one message of it into the dead
	// letters; group h never pops it.
	l := lease()
	r := pop(t, db, pgwire.PopRequest{Queue: "evict", Partition: "old", Group: "g", Batch: 10, Lease: l})
	items := completed(txids(r.Messages)...)
	items[3].Status, items[3].Error = "dlq", "poison"
	if a := ack(t, db, r.PartitionID, "g", &l, items...); a.Cursor != 10 || !a.Released {
		t.Fatalf("g's ack: %+v", a)
	}
	pop(t, db, pgwire.PopRequest{Queue: "evict", Partition: "young", Group: "h", AutoAck: true, Batch: 1}) // h reads the queue
	if _, err := db.Pool().Exec(ctx, `UPDATE queen.log_segments s SET created_at = s.created_at - interval '15 seconds'
		FROM queen.log_partitions p WHERE p.id = s.partition_id AND p.name = 'old'`); err != nil {
		t.Fatal(err)
	}
	for q := range queues {
		push(t, db, write(q, "young", q+"-young"))
	}

	for i := 0; ; i++ {
		res, err := db.RetentionStep(ctx, 16, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if res.Partitions == 0 {
			break
		}
		if i == 10 {
			t.Fatalf("retention still finds work after %d steps: %+v", i, res)
		}
	}

	left := func(q, p string) int64 {
		return count(t, db.Pool(), `SELECT coalesce(sum(s.end_offset - s.base_offset + 1), 0) FROM queen.log_segments s
			JOIN queen.log_partitions p ON p.id = s.partition_id JOIN queen.queues q ON q.id = p.queue_id
			WHERE q.name = $1 AND p.name = $2`, q, p)
	}
	for q, want := range map[string]int64{"evict": 0, "evict-kept": 0, "not-on": 100} {
		if n := left(q, "old"); n != want {
			t.Errorf("%s/old keeps %d messages, want %d", q, n, want)
		}
		if n := left(q, "young"); n != 1 {
			t.Errorf("%s/young keeps %d messages, want 1", q, n)
		}
	}
	for _, g := range []string{"g", "h", "fresh", pgwire.QueueMode} {
		if r := pop(t, db, pgwire.PopRequest{Queue: "evict", Partition: "old", Group: g}); len(r.Messages) != 0 {
			t.Errorf("group %s pops %v from evicted messages", g, txids(r.Messages))
		}
	}
	if r := pop(t, db, pgwire.PopRequest{Queue: "not-on", Partition: "old", Group: "g", Batch: 1}); fmt.Sprint(txids(r.Messages)) != "[not-on-0]" {
		t.Errorf("not-on pops %v", txids(r.Messages))
	}
	push(t, db, write("evict", "old", "after"))
	if r := pop(t, db, pgwire.PopRequest{Queue: "evict", Partition: "old", Group: "g"}); fmt.Sprint(txids(r.Messages)) != "[after]" || r.Cursor != 10 || r.To != 101 {
		t.Errorf("a cursor behind the evicted range: %+v", r)
	}
	dl, total, err := db.DeadLetters(ctx, [16]byte{}, "evict", "g", 10, 0)
	if err != nil || total != 1 || len(dl) != 1 || dl[0].TransactionID != "evict-3" || dl[0].Found {
		t.Fatalf("dead letters %d: %+v %v", total, dl, err)
	}
}
