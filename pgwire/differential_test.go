package pgwire_test

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/queenbridge/queenbridge/storage"
)

// TestPathsAgree holds the two paths that assign offsets to each other.
// The same randomized bundles go to two databases: one through PushBundle
// (the known-partition statement where it applies, log_push_multi_v2 for
// the rest and for what the statement left alone), the other through
// log_push_multi_v2 alone. A simulated bridge chooses each segment's
// partition id and verified offset from what the first database answered:
// mostly tight (the known path), sometimes stale, zero, a replay or a
// forgotten range (the general path, or the known path falling back).
// Frames repeat stored transactionIds, at any position in a segment, on
// queues with a window, with window 0, and with retention, which runs in
// between. Every answer (status, offsets, duplicates, partition, window),
// and at the end every stored row, must be the same in both.
func TestPathsAgree(t *testing.T) {
	t.Parallel()
	routed, general := newDB(t), newDB(t)
	ctx := context.Background()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))

	queues := []string{"diff.a", "diff.b", "diff.w0", "diff.r"}
	for _, db := range []*pgwire.DB{routed, general} {
		for _, q := range queues {
			upd := storage.QueueUpdate{}
			switch q {
			case "diff.w0":
				upd.DedupWindowSeconds = ptr32(0)
			case "diff.r":
				upd.RetentionSeconds, upd.DedupWindowSeconds = ptr32(60), ptr32(3600)
			}
			if _, err := db.ConfigureQueue(ctx, [16]byte{}, q, upd); err != nil {
				t.Fatal(err)
			}
		}
	}
	type key struct{ q, p string }
	state := map[key]*knownPartition{}
	paths := map[string]int{}
	for step := 0; step < 600; step++ {
		if step%100 == 99 {
			for _, db := range []*pgwire.DB{routed, general} {
				age(t, db, "diff.r", 2*time.Minute)
			}
			ra, erra := routed.RetentionStep(ctx, 64, 1000)
			rb, errb := general.RetentionStep(ctx, 64, 1000)
			if erra != nil || errb != nil || ra != rb {
				t.Fatalf("step %d: retention %+v %v against %+v %v", step, ra, erra, rb, errb)
			}
		}
		var writes []segment.Write
		picked := map[key]bool{}
		for n := 1 + rng.Intn(8); len(writes) < n; {
			k := key{queues[rng.Intn(len(queues))], fmt.Sprintf("p%d", rng.Intn(12))}
			if picked[k] {
				continue
			}
			picked[k] = true
			writes = append(writes, simulatedWrite(rng, k.q, k.p, state[k], paths))
		}
		ra, erra := routed.PushBundle(ctx, writes)
		rb, errb := general.PushGeneralOnly(ctx, writes)
		if (erra == nil) != (errb == nil) {
			t.Fatalf("step %d: errors differ: %v against %v", step, erra, errb)
		}
		if erra != nil {
			continue
		}
		for i := range writes {
			a, b := ra[i], rb[i]
			a.CreatedAt, b.CreatedAt = time.Time{}, time.Time{}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("step %d, segment %d (%s/%s, verified %d, pid %d): %+v against %+v",
					step, i, writes[i].Queue, writes[i].Partition, writes[i].Verified, writes[i].PartitionID, a, b)
			}
			k := key{writes[i].Queue, writes[i].Partition}
			st := state[k]
			if st == nil {
				st = &knownPartition{}
				state[k] = st
			}
			st.pid, st.qid = a.PartitionID, a.QueueID
			if a.Status == segment.Queued {
				st.last = a.BaseOffset + int64(writes[i].Count) - 1
				st.txids = append(st.txids, txidsOf(t, writes[i])...)
			}
		}
	}
	t.Logf("segments by the path chosen: %v", paths)
	if paths["tight"] == 0 || paths["stale"] == 0 || paths["replay"] == 0 || paths["forgotten"] == 0 {
		t.Fatalf("the bundles did not cover every path: %v", paths)
	}
	if a, b := storedRows(t, routed), storedRows(t, general); !reflect.DeepEqual(a, b) {
		t.Fatalf("stored rows differ:\n%v\nagainst\n%v", a, b)
	}
}

// knownPartition is what the simulated bridge knows of a partition.
type knownPartition struct {
	pid, qid, last int64
	txids          []string // stored, in order
}

// simulatedWrite builds one segment as a bridge that knows st (nil: a
// partition it has not seen) would send it, and counts the path chosen.
func simulatedWrite(rng *rand.Rand, q, p string, st *knownPartition, paths map[string]int) segment.Write {
	fresh := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = uuid.NewString()
		}
		return out
	}
	// some, at random positions: repeats of stored ids (at most once each
	// in one segment: fusion's layer 2 collapses repeats inside a flush)
	withRepeats := func(n int) []string {
		out := fresh(n)
		if st == nil || len(st.txids) == 0 {
			return out
		}
		used := map[string]bool{}
		for i := range out {
			if rng.Intn(3) == 0 {
				if tx := st.txids[rng.Intn(len(st.txids))]; !used[tx] {
					out[i], used[tx] = tx, true
				}
			}
		}
		return out
	}
	n := 1 + rng.Intn(4)
	if st == nil || st.pid == 0 {
		paths["new"]++
		return write(q, p, withRepeats(n)...)
	}
	var w segment.Write
	switch r := rng.Intn(20); {
	case r < 11: // tight: the bridge wrote everything up to last (fresh ids only: it would answer a repeat itself)
		paths["tight"]++
		w = write(q, p, fresh(n)...)
		w.Verified = st.last
	case r < 13: // stale: another writer may have written since
		paths["stale"]++
		w = write(q, p, withRepeats(n)...)
		w.Verified = max(0, st.last-1-int64(rng.Intn(3)))
	case r < 15: // a restart: probe the whole window
		paths["zero"]++
		w = write(q, p, withRepeats(n)...)
	case r < 17: // a replay of spooled frames
		paths["replay"]++
		w = write(q, p, withRepeats(n)...)
		w.MinWindowSeconds = 60
	case r < 19: // frames this bridge wrote but forgot
		paths["forgotten"]++
		w = write(q, p, withRepeats(n)...)
		w.Verified = st.last
		w.ForgottenLo, w.ForgottenHi = int64(rng.Intn(int(st.last)+1)), st.last
	default: // minted ids: nothing stored can match
		paths["minted"]++
		w = write(q, p, fresh(n)...)
		w.Verified = 1<<63 - 1
	}
	w.PartitionID, w.QueueID = st.pid, st.qid
	return w
}

// txidsOf unpacks the transactionIds of a write's frames.
func txidsOf(t *testing.T, w segment.Write) []string {
	t.Helper()
	out := make([]string, w.Count)
	for k := range out {
		fr, err := segment.Unpack(w.Blob, k)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = fr.TransactionID
	}
	return out
}

// age makes every stored row of queue older by d.
func age(t *testing.T, db *pgwire.DB, queue string, d time.Duration) {
	t.Helper()
	for _, table := range []string{"log_segments", "log_txns"} {
		if _, err := db.Pool().Exec(context.Background(), `UPDATE queen.`+table+` x SET created_at = x.created_at - make_interval(secs => $2)
			FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
			WHERE p.id = x.partition_id AND q.name = $1`, queue, d.Seconds()); err != nil {
			t.Fatal(err)
		}
	}
}

// storedRows lists everything the write path stores, by names, not ids:
// partitions with their offsets, segments with their blobs, transaction
// rows. Timestamps are left out; their order is checked by the offsets.
func storedRows(t *testing.T, db *pgwire.DB) []string {
	t.Helper()
	return textRows(t, db.Pool(), `
		SELECT 'p ' || q.name || '/' || p.name || ' last ' || p.last_offset || ' txns_start ' || p.txns_start
		FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
		UNION ALL
		SELECT 's ' || q.name || '/' || p.name || ' ' || s.base_offset || '-' || s.end_offset || ' n ' || s.msg_count
		       || ' ' || md5(s.payload) || ' ' || coalesce(md5(s.hashes), '-')
		FROM queen.log_segments s JOIN queen.log_partitions p ON p.id = s.partition_id JOIN queen.queues q ON q.id = p.queue_id
		UNION ALL
		SELECT 't ' || q.name || '/' || p.name || ' ' || x.base_offset || '-' || x.end_offset || ' ' || md5(x.hashes)
		FROM queen.log_txns x JOIN queen.log_partitions p ON p.id = x.partition_id JOIN queen.queues q ON q.id = p.queue_id
		ORDER BY 1`)
}
