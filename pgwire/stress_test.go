package pgwire_test

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/queenbridge/queenbridge/storage"
)

// TestConcurrentOverlappingBundles: 32 writers push bundles over overlapping
// partition sets, in shuffled orders, including queues and partitions that do
// not exist yet, for several seconds. Half of the segments name the
// partition id and the offset their writer last saw, so they take the
// known-partition statement, which leaves them to log_push_multi_v2 when
// another writer came in between; the rest go there directly. Retention
// runs all the while on one queue whose rows expire after a second. No
// error (a deadlock would be one), and every partition's offsets are dense
// (after what retention removed) and match what was sent.
func TestConcurrentOverlappingBundles(t *testing.T) {
	db := newDB(t)
	const writers = 32
	const retained = "stress.q5"
	if _, err := db.ConfigureQueue(context.Background(), [16]byte{}, retained,
		storage.QueueUpdate{RetentionSeconds: ptr32(1), DedupWindowSeconds: ptr32(1)}); err != nil {
		t.Fatal(err)
	}
	stopRetention := make(chan struct{})
	retentionDone := make(chan error, 1)
	go func() {
		var err error
		for steps := 0; err == nil; steps++ {
			select {
			case <-stopRetention:
				if steps == 0 {
					err = fmt.Errorf("no retention step ran")
				}
				retentionDone <- err
				return
			default:
			}
			_, err = db.RetentionStep(context.Background(), 16, 100)
		}
		retentionDone <- err
	}()
	deadline := time.Now().Add(4 * time.Second)
	type key struct{ q, p string }
	var mu sync.Mutex
	sent := map[key]int64{}
	bundles := 0
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			local := map[key]int64{}
			seen := map[key][3]int64{} // partition id, queue id, last offset this writer saw
			n := 0
			for time.Now().Before(deadline) {
				picked := map[key]bool{}
				var writes []segment.Write
				for len(writes) < 1+rng.Intn(12) {
					k := key{fmt.Sprintf("stress.q%d", rng.Intn(6)), fmt.Sprintf("p%d", rng.Intn(200))}
					if picked[k] {
						continue
					}
					picked[k] = true
					txids := make([]string, 1+rng.Intn(4))
					for i := range txids {
						txids[i] = uuid.NewString()
					}
					wr := write(k.q, k.p, txids...)
					wr.Verified = int64(rng.Intn(3)) // mostly a probe over the whole window
					if last, ok := seen[k]; ok && rng.Intn(2) == 0 {
						wr.PartitionID, wr.QueueID, wr.Verified = last[0], last[1], last[2]
					}
					writes = append(writes, wr)
					local[k] += int64(len(txids))
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				res, err := db.PushBundle(ctx, writes)
				cancel()
				if err != nil {
					errs <- err
					return
				}
				for i, r := range res {
					if r.Status != segment.Queued {
						errs <- fmt.Errorf("segment %d of a bundle of unique ids: %v %v", i, r.Status, r.Err)
						return
					}
					seen[key{writes[i].Queue, writes[i].Partition}] = [3]int64{r.PartitionID, r.QueueID, r.BaseOffset + int64(writes[i].Count) - 1}
				}
				n++
			}
			mu.Lock()
			for k, v := range local {
				sent[k] += v
			}
			bundles += n
			mu.Unlock()
		}(int64(w))
	}
	wg.Wait()
	close(stopRetention)
	if err := <-retentionDone; err != nil {
		t.Fatalf("retention: %v", err)
	}
	close(errs)
	for err := range errs {
		t.Fatalf("writer failed: %v", err)
	}
	t.Logf("%d bundles over %d partitions", bundles, len(sent))

	ctx := context.Background()
	// Retention removes the oldest segments of its queue: there the first
	// segment left may start anywhere.
	gaps := count(t, db.Pool(), `SELECT count(*) FROM (
		SELECT s.base_offset, lag(s.end_offset, 1, CASE WHEN q.name = $1 THEN s.base_offset - 1 ELSE 0 END)
		           OVER (PARTITION BY s.partition_id ORDER BY s.end_offset) AS prev
		FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id JOIN queen.queues q ON q.id = p.queue_id) s
		WHERE base_offset <> prev + 1`, retained)
	if gaps != 0 {
		t.Fatalf("%d segments do not follow their predecessor", gaps)
	}
	rows, err := db.Pool().Query(ctx, `SELECT q.name, p.name, p.last_offset,
		coalesce((SELECT max(end_offset) FROM queen.log_segments s WHERE s.partition_id = p.id), 0)
		FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var q, p string
		var last, maxEnd int64
		if err := rows.Scan(&q, &p, &last, &maxEnd); err != nil {
			t.Fatal(err)
		}
		seen++
		if want := sent[key{q, p}]; last != want || (maxEnd != want && q != retained) {
			t.Errorf("%s/%s: last_offset %d, last segment ends at %d, frames sent %d", q, p, last, maxEnd, want)
		}
	}
	if seen != len(sent) {
		t.Fatalf("%d partitions stored, %d pushed to", seen, len(sent))
	}
}

// TestAllocationUpdateIsHOT: the offset UPDATEs (the known-partition
// statement's and log_push_multi_v2's) must be heap-only tuple updates,
// also when they move last_write_at: before every push the row's
// last_write_at is set two seconds back (itself an update that must stay
// HOT), so that every push moves it, as it does for a partition pushed to
// less than once a second.
func TestAllocationUpdateIsHOT(t *testing.T) {
	t.Parallel()
	dsn := newDBDSN(t)
	db := openDSN(t, dsn)
	ctx := context.Background()
	const pushes = 300
	var pid, qid, last int64
	for i := 0; i < pushes; i++ {
		// Every other push names the partition and its last offset, so both
		// paths that assign offsets are counted.
		w := write("hot", "p", fmt.Sprintf("t%d", i))
		if pid != 0 {
			backdate(t, db, pid)
		}
		if i%2 == 1 {
			w.PartitionID, w.QueueID, w.Verified = pid, qid, last
		}
		r := push(t, db, w)[0]
		pid, qid, last = r.PartitionID, r.QueueID, r.BaseOffset
	}
	db.Close() // backends flush their statistics as they exit
	reader := openDSN(t, dsn)
	var upd, hot int64
	deadline := time.Now().Add(30 * time.Second)
	for {
		if err := reader.Pool().QueryRow(ctx, `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables
			WHERE schemaname = 'queen' AND relname = 'log_partitions'`).Scan(&upd, &hot); err != nil {
			t.Fatal(err)
		}
		if upd >= 2*pushes-1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("log_partitions: %d updates, %d HOT", upd, hot)
	if upd < 2*pushes-1 {
		t.Fatalf("statistics show %d updates after %d pushes and %d backdatings", upd, pushes, pushes-1)
	}
	// A page with no room left makes an update non-HOT (fillfactor 70
	// leaves room, and pruning makes more); nearly all must be HOT.
	if hot < upd*9/10 {
		t.Fatalf("only %d of %d updates of log_partitions were HOT", hot, upd)
	}
}

// backdate sets the partition's last_write_at two seconds back, so that
// the next push moves it.
func backdate(t *testing.T, db *pgwire.DB, pid int64) {
	t.Helper()
	if _, err := db.Pool().Exec(context.Background(), `UPDATE queen.log_partitions
		SET last_write_at = last_write_at - interval '2 seconds' WHERE id = $1`, pid); err != nil {
		t.Fatal(err)
	}
}
