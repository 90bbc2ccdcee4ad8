package bridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/segment"
)

// What TestSectionTwelveUnderConcurrency judges after the run, from what
// the database stored and what the goroutines recorded.

// readAll reads a partition back by offset, page by page.
func (r *concRun) readAll(queue, partition string) []readMessage {
	var out []readMessage
	for from := int64(1); ; {
		a := r.n.read(fmt.Sprintf("queue=%s&partition=%s&from=%d&limit=1000", queue, partition, from))
		if len(a.Messages) == 0 {
			return out
		}
		for _, m := range a.Messages {
			out = append(out, readMessage{Offset: m.Offset, TransactionID: m.TransactionID, Payload: m.Payload})
		}
		from = a.Next
	}
}

type readMessage struct {
	Offset        int64
	TransactionID string
	Payload       json.RawMessage
}

// offsetOf is the offset of A's message txid in partition: "pN-k" is at
// k+1 (the push answers said so, produce checked it).
func offsetOf(partition, txid string) (int64, bool) {
	k, err := strconv.ParseInt(strings.TrimPrefix(txid, partition+"-"), 10, 64)
	return k + 1, err == nil && strings.HasPrefix(txid, partition+"-")
}

// checkA: nothing pushed to A is lost; every message is where its push
// answer put it.
func (r *concRun) checkA(t *testing.T) {
	t.Helper()
	for p := 0; p < r.parts; p++ {
		part := fmt.Sprintf("p%d", p)
		ms := r.readAll(qIntake, part)
		if len(ms) != r.perPart {
			t.Errorf("A/%s holds %d messages, %d were pushed", part, len(ms), r.perPart)
			continue
		}
		for k, m := range ms {
			if m.Offset != int64(k+1) || m.TransactionID != fmt.Sprintf("%s-%d", part, k) {
				t.Errorf("A/%s: %s at offset %d, want %s-%d at %d", part, m.TransactionID, m.Offset, part, k, k+1)
				break
			}
		}
	}
}

// checkB: read back by offset, each partition of B holds every message of
// the same partition of A exactly once, in A's offset order, at the offset
// its transaction answered.
func (r *concRun) checkB(t *testing.T) {
	t.Helper()
	if len(r.outlet) != r.total {
		t.Errorf("%d of %d messages of A were moved to B", len(r.outlet), r.total)
	}
	for p := 0; p < r.parts; p++ {
		part := fmt.Sprintf("p%d", p)
		ms := r.readAll(qOutlet, part)
		if len(ms) != r.perPart {
			t.Errorf("B/%s holds %d messages, A/%s %d", part, len(ms), part, r.perPart)
		}
		for k, m := range ms {
			var body struct {
				A string `json:"a"`
			}
			want := fmt.Sprintf("%s-%d", part, k)
			if err := json.Unmarshal(m.Payload, &body); err != nil || m.Offset != int64(k+1) || body.A != want {
				t.Errorf("B/%s: message %d is at offset %d with payload %s, want A's %s at offset %d", part, k, m.Offset, m.Payload, want, k+1)
				break
			}
			if r.outlet[want] != m.Offset {
				t.Errorf("B/%s: %s is stored at offset %d, its transaction answered offset %d", part, want, m.Offset, r.outlet[want])
				break
			}
		}
	}
}

// checkShort: R's pushes got dense offsets while retention ran, retention
// removed its oldest segments, and what is left runs dense to the end.
func (r *concRun) checkShort(t *testing.T) {
	t.Helper()
	for p := 0; p < r.parts; p++ {
		part := fmt.Sprintf("p%d", p)
		if got := len(r.shortOffsets[part]); got != r.perPart {
			t.Errorf("R/%s: %d pushes answered, %d sent", part, got, r.perPart)
		}
		if last := r.n.count(`SELECT p.last_offset FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id
			WHERE q.name = $1 AND p.name = $2`, qShort, part); last != int64(r.perPart) {
			t.Errorf("R/%s: last_offset %d, %d pushed", part, last, r.perPart)
		}
		ms := r.readAll(qShort, part)
		for i, m := range ms {
			if m.Offset != int64(r.perPart-len(ms)+1+i) {
				t.Errorf("R/%s: what retention left is not dense up to the end: offset %d at %d of %d", part, m.Offset, i, len(ms))
				break
			}
		}
	}
}

// checkChain: per partition, group's deliveries, ordered by the offset
// they start at, chain from the beginning to the end: no gap, no repeat.
func (r *concRun) checkChain(t *testing.T, group string) {
	t.Helper()
	type span struct{ from, to int64 }
	byPart := map[string][]span{}
	for _, d := range r.deliveries[group] {
		s, ok := r.span(t, group, d)
		if !ok {
			return
		}
		byPart[d.partition] = append(byPart[d.partition], span{s[0], s[1]})
	}
	for p := 0; p < r.parts; p++ {
		part := fmt.Sprintf("p%d", p)
		ss := byPart[part]
		sort.Slice(ss, func(i, j int) bool { return ss[i].from < ss[j].from })
		at := int64(0) // the offset the next delivery must start after
		for _, s := range ss {
			if s.from != at+1 {
				t.Errorf("%s on A/%s: a delivery of offsets %d..%d, where the one before ended at %d (repeated or skipped)", group, part, s.from, s.to, at)
				return
			}
			at = s.to
		}
		if at != int64(r.perPart) {
			t.Errorf("%s on A/%s: deliveries reach offset %d of %d", group, part, at, r.perPart)
		}
	}
}

// span is the offsets a delivery held, which must be consecutive: a pop
// delivers what follows the cursor, in order, whatever seeks and deletes
// did to the cursor before.
func (r *concRun) span(t *testing.T, group string, d delivery) ([2]int64, bool) {
	t.Helper()
	var s [2]int64
	for i, txid := range d.txids {
		off, ok := offsetOf(d.partition, txid)
		if !ok || (i > 0 && off != s[1]+1) {
			t.Errorf("%s: a delivery of A/%s holds %v: not consecutive offsets of the partition", group, d.partition, d.txids)
			return s, false
		}
		if i == 0 {
			s[0] = off
		}
		s[1] = off
	}
	return s, true
}

// checkRuns: every delivery to a seeked or deleted group is a run of
// consecutive offsets.
func (r *concRun) checkRuns(t *testing.T, group string) {
	t.Helper()
	if len(r.deliveries[group]) == 0 {
		t.Errorf("%s: nothing delivered", group)
	}
	for _, d := range r.deliveries[group] {
		if _, ok := r.span(t, group, d); !ok {
			return
		}
	}
}

// readsAllOfA pops every partition of A by name with group until it is
// empty, acknowledging each delivery: it must get the whole partition, in
// order.
func (r *concRun) readsAllOfA(t *testing.T, group string, params ...string) {
	t.Helper()
	for p := 0; p < r.parts; p++ {
		part := fmt.Sprintf("p%d", p)
		var got []string
		for {
			status, pp := r.n.popHTTP(qIntake, part, append([]string{"consumerGroup", group, "batch", "100"}, params...)...)
			if status == http.StatusNoContent {
				break
			}
			for _, m := range pp.Messages {
				got = append(got, m.TransactionID)
			}
			for _, a := range r.n.ackAll(pp, group, nil) {
				if !a.Success {
					t.Fatalf("%s: ack after the run: %+v (error %s)", group, a, errText(a.Error))
				}
			}
		}
		if len(got) != r.perPart {
			t.Errorf("%s reads %d messages of A/%s after the run, want %d", group, len(got), part, r.perPart)
			continue
		}
		for k, txid := range got {
			if txid != fmt.Sprintf("%s-%d", part, k) {
				t.Errorf("%s reads A/%s out of order after the run: %s at %d", group, part, txid, k)
				break
			}
		}
	}
}

// checkNoDeadlocks reads PostgreSQL's own count of deadlocks in the test's
// database, once every connection the bridge had is gone (a backend
// reports its statistics before it leaves pg_stat_activity), so one no
// request saw (a statement whose failure the bridge retried or logged)
// is counted too.
func (r *concRun) checkNoDeadlocks(t *testing.T) {
	t.Helper()
	dsn := r.n.db.Pool().Config().ConnConfig.ConnString()
	r.n.stop()
	db := testkit.OpenDB(t, dsn, 1) // one connection: pg_backend_pid() is this reader's
	scan := func(sql string) int64 {
		var v int64
		if err := db.Pool().QueryRow(context.Background(), sql).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	testkit.WaitFor(t, "the bridge's connections to end", time.Minute, func() bool {
		return scan(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`) == 0
	})
	if d := scan(`SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`); d != 0 {
		t.Errorf("PostgreSQL detected %d deadlocks in the run", d)
	}
}

// bundleErrors is fusion's sink (the database, with the interfaces fusion
// looks for) with every segment that failed recorded.
type bundleErrors struct {
	fusion.Sink
	hashes fusion.HashSource
	meter  fusion.FlushMeter
	mu     sync.Mutex // guards errs: flush goroutines add, the test reads
	errs   []sinkErr
}

type sinkErr struct{ queue, partition, err string }

func (b *bundleErrors) wrap(s fusion.Sink) fusion.Sink {
	b.Sink = s
	b.hashes, _ = s.(fusion.HashSource)
	b.meter, _ = s.(fusion.FlushMeter)
	return b
}

func (b *bundleErrors) PushBundle(ctx context.Context, writes []segment.Write) ([]segment.Result, error) {
	res, err := b.Sink.PushBundle(ctx, writes)
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, w := range writes {
		switch {
		case err != nil:
			b.errs = append(b.errs, sinkErr{w.Queue, w.Partition, err.Error()})
		case res[i].Status == segment.Failed:
			b.errs = append(b.errs, sinkErr{w.Queue, w.Partition, fmt.Sprint(res[i].Err)})
		}
	}
	return res, err
}

func (b *bundleErrors) StoredHashes(ctx context.Context, pid, after, upTo int64, window int32) ([]segment.HashAt, error) {
	return b.hashes.StoredHashes(ctx, pid, after, upTo, window)
}

func (b *bundleErrors) FlushLatency(ctx context.Context) (time.Duration, error) {
	return b.meter.FlushLatency(ctx)
}

func (b *bundleErrors) list() []sinkErr {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.errs)
}
