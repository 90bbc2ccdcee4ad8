package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/pgwire"
)

// fakeStore answers the group routes' one read from a fixed list of
// cursors; any other call of the Store panics (the nil embedded
// interface), which a test of these routes must not make. Routes may run
// on any goroutine, so a mutex guards the count.
type fakeStore struct {
	Store
	cursors []pgwire.GroupCursor
	err     error
	mu      sync.Mutex
	reads   int
}

func (f *fakeStore) GroupCursors(_ context.Context, _ tenancy.TenantID, group string) ([]pgwire.GroupCursor, error) {
	f.mu.Lock()
	f.reads++
	f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	var out []pgwire.GroupCursor
	for _, c := range f.cursors {
		if group == "" || c.Group == group {
			out = append(out, c)
		}
	}
	return out, nil
}

func (f *fakeStore) readCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

// The cursors of three (group, queue) pairs, by group, queue and
// partition as pgwire orders them: one moved, one lagging past Queen's
// threshold, one that never moved.
func groupCursors() []pgwire.GroupCursor {
	old := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return []pgwire.GroupCursor{
		{Group: "g1", Queue: "q1", Partition: "a", PartitionID: 1, Cursor: 5, Lag: 3, OldestAt: old, LagSeconds: 10},
		{Group: "g1", Queue: "q1", Partition: "b", PartitionID: 2},
		{Group: "g1", Queue: "q2", Partition: "a", PartitionID: 3, Lag: 4, OldestAt: old, LagSeconds: 400},
		{Group: "g2", Queue: "q1", Partition: "a", PartitionID: 1, Cursor: 2, Start: 2},
	}
}

func request(query string) Request {
	q, _ := url.ParseQuery(query)
	return Request{Path: func(string) string { return "" }, Query: q}
}

// GET /api/v1/consumer-groups folds the cursors into one summary per
// (group, queue): members, partitions with lag, the lag summed, the
// oldest lag, and the state Queen gives it.
func TestGroupSummariesOnStore(t *testing.T) {
	t.Parallel()
	a := &Admin{cfg: Config{DB: &fakeStore{cursors: groupCursors()}}}
	status, body := a.serveGroups(context.Background(), tenancy.TenantID{}, request(""))
	var got []struct {
		Name, QueueName, State     string
		Members, PartitionsWithLag int
		TotalLag, MaxTimeLag       int64
	}
	if err := json.Unmarshal(body, &got); status != jsonapi.StatusOK || err != nil {
		t.Fatalf("%d %s: %v", status, body, err)
	}
	want := fmt.Sprint([]any{
		[]any{"g1", "q1", "Stable", 2, 1, int64(3), int64(10)},
		[]any{"g1", "q2", "Lagging", 1, 1, int64(4), int64(400)},
		[]any{"g2", "q1", "Dead", 1, 0, int64(0), int64(0)},
	})
	var have []any
	for _, g := range got {
		have = append(have, []any{g.Name, g.QueueName, g.State, g.Members, g.PartitionsWithLag, g.TotalLag, g.MaxTimeLag})
	}
	if fmt.Sprint(have) != want {
		t.Fatalf("summaries\n got %v\nwant %v", have, want)
	}

	down := &fakeStore{err: fmt.Errorf("reading cursors: %w", pgwire.ErrUnavailable)}
	a = &Admin{cfg: Config{DB: down}}
	if status, _ := a.serveGroups(context.Background(), tenancy.TenantID{}, request("")); status != jsonapi.StatusServiceUnavailable {
		t.Fatalf("database unavailable answered %d, want 503", status)
	}
}

// The lagging route lists the partitions whose oldest unconsumed message
// is older than minLagSeconds, the oldest first; a minLagSeconds that is
// not a number is refused before any read.
func TestLaggingOnStore(t *testing.T) {
	t.Parallel()
	store := &fakeStore{cursors: groupCursors()}
	a := &Admin{cfg: Config{DB: store}}
	status, body := a.serveLagging(context.Background(), tenancy.TenantID{}, request("minLagSeconds=5"))
	var got []struct {
		Group string `json:"consumer_group"`
		Queue string `json:"queue_name"`
		Lag   int64  `json:"time_lag_seconds"`
	}
	if err := json.Unmarshal(body, &got); status != jsonapi.StatusOK || err != nil {
		t.Fatalf("%d %s: %v", status, body, err)
	}
	if fmt.Sprint(got) != "[{g1 q2 400} {g1 q1 10}]" {
		t.Fatalf("lagging %v, want g1/q2 then g1/q1", got)
	}
	if _, body := a.serveLagging(context.Background(), tenancy.TenantID{}, request("minLagSeconds=60")); string(body) != `[{"consumer_group":"g1","queue_name":"q2","partition_name":"a","partition_id":"3","worker_id":null,"offset_lag":4,"time_lag_seconds":400,"lag_hours":0.11,"oldest_unconsumed_at":"2026-01-02T03:04:05.000Z","last_consumed_at":null}]` {
		t.Fatalf("over a minute: %s", body)
	}

	reads := store.readCount()
	status, body = a.serveLagging(context.Background(), tenancy.TenantID{}, request("minLagSeconds=soon"))
	if status != jsonapi.StatusBadRequest || string(body) != `{"error":"minLagSeconds must be an integer, got \"soon\""}` || store.readCount() != reads {
		t.Fatalf("bad minLagSeconds: %d %s after %d reads, want 400 and no read", status, body, store.readCount()-reads)
	}
}
