package testkit

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/segment"
)

// StoredTransactionIDs decodes every stored frame of queue (every queue when
// queue is "") and counts them by transactionId: exactly-once checks read it.
func StoredTransactionIDs(t testing.TB, pool *pgxpool.Pool, queue string) map[string]int {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT s.payload FROM queen.log_segments s
		JOIN queen.log_partitions p ON p.id = s.partition_id JOIN queen.queues q ON q.id = p.queue_id
		WHERE $1 = '' OR q.name = $1`, queue)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var blob []byte
		if err := rows.Scan(&blob); err != nil {
			t.Fatal(err)
		}
		frames, err := segment.UnpackAll(blob)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range frames {
			out[f.TransactionID]++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
