package pgwire_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

// register registers a streaming query of tenant on source and returns
// its id.
func register(t testing.TB, db *pgwire.DB, tenant tenancy.TenantID, name, source, hash string) [16]byte {
	t.Helper()
	r, err := db.StreamRegister(context.Background(), pgwire.StreamRegistration{Tenant: tenant, ID: uuid.New(), Name: name,
		Source: source, ConfigHash: hash})
	if err != nil || r.Conflict {
		t.Fatalf("register %s: %+v %v", name, r, err)
	}
	return r.ID
}

func upsert(key, value string) pgwire.StreamOp {
	return pgwire.StreamOp{Key: key, Value: json.RawMessage(value)}
}

func stateOf(t testing.TB, db *pgwire.DB, q pgwire.StreamStateQuery) map[string]string {
	t.Helper()
	rows, err := db.StreamState(context.Background(), q)
	if err != nil {
		t.Fatalf("StreamState: %v", err)
	}
	out := map[string]string{}
	for _, r := range rows {
		out[r.Key] = string(r.Value)
	}
	return out
}

// A cycle commits its state operations, its sink pushes and its source
// acknowledgement together: the state rows are there, the sink partition
// holds the pushed messages, and the cursor sits on the acknowledged (last)
// message of the batch with the lease released.
func TestStreamCycleCommitsStatePushesAndAck(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	src := push(t, db, write("src", "p", "a1", "a2", "a3"))
	q := register(t, db, tenancy.TenantID{}, "totals", "src", "h1")
	_, l := popAll(t, db, "src", "p", "g")
	sink := write("sink", "p", "s1", "s2")
	sink.Verified = 0
	res, err := db.StreamCycle(ctx, pgwire.StreamCycleRequest{Query: q, PartitionID: src[0].PartitionID, Writes: []segment.Write{sink},
		Ack:     &pgwire.StreamAck{Group: "g", Lease: &l, TransactionID: "a3", Status: "completed"},
		Release: true, Ops: []pgwire.StreamOp{upsert("k2", `{"sum":2}`), upsert("k1", `{"sum":1}`), {Delete: true, Key: "k0"}, upsert("k0", `7`)}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops != 4 || !res.Released || res.Cursor != 3 || len(res.Pushed) != 1 || res.Pushed[0].BaseOffset != 1 || res.SourceQueue != "src" {
		t.Fatalf("cycle answered %+v", res)
	}
	got := stateOf(t, db, pgwire.StreamStateQuery{Query: q, PartitionID: src[0].PartitionID})
	// Operations on one key keep their order: k0 deleted, then stored.
	if len(got) != 3 || got["k1"] != `{"sum": 1}` || got["k2"] != `{"sum": 2}` || got["k0"] != `7` {
		t.Fatalf("state %v", got)
	}
	if n := count(t, db.Pool(), `SELECT last_offset FROM queen.log_partitions WHERE id = $1`, res.Pushed[0].PartitionID); n != 2 {
		t.Fatalf("sink ends at %d", n)
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.consumer_cursors WHERE partition_id = $1 AND cursor_offset = 3 AND lease_id IS NULL`, src[0].PartitionID); n != 1 {
		t.Fatal("the cursor did not move to the acknowledged message with the lease released")
	}
}

// A cycle whose acknowledgement does not apply (a lease that expired, a
// message the group was not delivered), whose sink push repeats a stored
// transactionId, or that names another tenant's query writes nothing: no
// state, no sink offset, no cursor move.
func TestStreamCycleAbortsWriteNothing(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	src := push(t, db, write("src", "p", "a1", "a2"))
	push(t, db, write("sink", "p", "old"))
	q := register(t, db, tenancy.TenantID{}, "totals", "src", "h1")
	_, l := popAll(t, db, "src", "p", "g")
	pid := src[0].PartitionID
	fresh := write("sink", "p", "s1")
	fresh.Verified = 0
	ops := []pgwire.StreamOp{upsert("k", `{"n":1}`)}
	if _, err := db.Pool().Exec(ctx, `UPDATE queen.consumer_cursors SET lease_expires_at = now() - interval '1 second' WHERE partition_id = $1`, pid); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		req   pgwire.StreamCycleRequest
		check func(*pgwire.StreamCycleError) bool
	}{
		{"expired lease", pgwire.StreamCycleRequest{Query: q, PartitionID: pid, Writes: []segment.Write{fresh}, Ops: ops,
			Ack: &pgwire.StreamAck{Group: "g", Lease: &l, TransactionID: "a2", Status: "completed"}},
			func(e *pgwire.StreamCycleError) bool { return e.Ack != nil && e.Ack.Lease }},
		{"unknown message", pgwire.StreamCycleRequest{Query: q, PartitionID: pid, Writes: []segment.Write{fresh}, Ops: ops,
			Ack: &pgwire.StreamAck{Group: "g", TransactionID: "nope", Status: "completed"}},
			func(e *pgwire.StreamCycleError) bool { return e.Ack != nil && !e.Ack.Lease }},
		{"duplicate sink push", pgwire.StreamCycleRequest{Query: q, PartitionID: pid, Writes: []segment.Write{write("sink", "p", "old")}, Ops: ops},
			func(e *pgwire.StreamCycleError) bool { return e.Duplicate != nil && e.Duplicate.Offset == 1 }},
		{"another tenant's query", pgwire.StreamCycleRequest{Tenant: tenancy.TenantID{1}, Query: q, PartitionID: pid, Ops: ops},
			func(e *pgwire.StreamCycleError) bool { return e.Ack == nil && e.Duplicate == nil }},
		{"unknown partition", pgwire.StreamCycleRequest{Query: q, PartitionID: pid + 1000, Ops: ops},
			func(e *pgwire.StreamCycleError) bool { return e.Ack == nil && e.Duplicate == nil }},
	} {
		_, err := db.StreamCycle(ctx, c.req)
		var e *pgwire.StreamCycleError
		if !errors.As(err, &e) || !c.check(e) {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.stream_state`); n != 0 {
		t.Fatalf("%d state rows written", n)
	}
	if n := count(t, db.Pool(), `SELECT sum(last_offset) FROM queen.log_partitions`); n != 3 {
		t.Fatalf("offsets moved: %d", n)
	}
	if n := count(t, db.Pool(), `SELECT cursor_offset FROM queen.consumer_cursors WHERE partition_id = $1`, pid); n != 0 {
		t.Fatalf("cursor moved to %d", n)
	}
}

// Registration is idempotent by name; another config_hash is refused
// unless reset, which drops the query's state.
func TestStreamRegisterRefusesAnotherHashUnlessReset(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	src := push(t, db, write("src", "p", "a1"))
	q := register(t, db, tenancy.TenantID{}, "totals", "src", "h1")
	if _, err := db.StreamCycle(ctx, pgwire.StreamCycleRequest{Query: q, PartitionID: src[0].PartitionID, Ops: []pgwire.StreamOp{upsert("k", "1")}}); err != nil {
		t.Fatal(err)
	}
	reg := func(hash string, reset bool) pgwire.StreamRegistered {
		r, err := db.StreamRegister(ctx, pgwire.StreamRegistration{ID: uuid.New(), Name: "totals", Source: "src", Sink: "out", ConfigHash: hash, Reset: reset})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := reg("h1", false); r.ID != q || r.Fresh || r.Reset || r.Conflict {
		t.Fatalf("same hash: %+v", r)
	}
	if r := reg("h2", false); !r.Conflict || r.ConfigHash != "h1" || r.ID != q {
		t.Fatalf("other hash: %+v", r)
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.stream_state`); n != 1 {
		t.Fatalf("a refused registration left %d state rows", n)
	}
	if r := reg("h2", true); !r.Reset || r.ID != q || r.ConfigHash != "h2" {
		t.Fatalf("reset: %+v", r)
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.stream_state`); n != 0 {
		t.Fatalf("a reset left %d state rows", n)
	}
	if r := reg("h2", false); r.Conflict || r.Reset {
		t.Fatalf("after reset: %+v", r)
	}
}

// state/get reads one (query, partition): by keys, by prefix and by
// ripeness (value.windowEnd a number at most the bound), ANDed; another
// partition's rows and another tenant's query are never read.
func TestStreamStateFilters(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	src := push(t, db, write("src", "p", "a1"), write("src", "r", "b1"))
	q := register(t, db, tenancy.TenantID{}, "totals", "src", "h1")
	p, r := src[0].PartitionID, src[1].PartitionID
	for pid, ops := range map[int64][]pgwire.StreamOp{
		p: {upsert("w\x1fa", `{"windowEnd":100}`), upsert("w\x1fb", `{"windowEnd":200}`), upsert("x\x1fa", `{"windowEnd":50}`), upsert("w\x1fc", `{"windowEnd":"soon"}`)},
		r: {upsert("w\x1fa", `{"windowEnd":10}`)},
	} {
		if _, err := db.StreamCycle(ctx, pgwire.StreamCycleRequest{Query: q, PartitionID: pid, Ops: ops}); err != nil {
			t.Fatal(err)
		}
	}
	ripe := 150.0
	for _, c := range []struct {
		name string
		q    pgwire.StreamStateQuery
		want string
	}{
		{"all", pgwire.StreamStateQuery{}, "w\x1fa w\x1fb w\x1fc x\x1fa"},
		{"keys", pgwire.StreamStateQuery{Keys: []string{"x\x1fa", "w\x1fb", "missing"}}, "w\x1fb x\x1fa"},
		{"prefix", pgwire.StreamStateQuery{Prefix: "w\x1f"}, "w\x1fa w\x1fb w\x1fc"},
		{"ripe", pgwire.StreamStateQuery{RipeAtOrBefore: &ripe}, "w\x1fa x\x1fa"},
		{"prefix and ripe", pgwire.StreamStateQuery{Prefix: "w\x1f", RipeAtOrBefore: &ripe}, "w\x1fa"},
	} {
		c.q.Query, c.q.PartitionID = q, p
		rows, err := db.StreamState(ctx, c.q)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, row := range rows {
			keys = append(keys, row.Key)
		}
		if got := joinKeys(keys); got != c.want {
			t.Fatalf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if _, err := db.StreamState(ctx, pgwire.StreamStateQuery{Tenant: tenancy.TenantID{7}, Query: q, PartitionID: p}); !errors.Is(err, pgwire.ErrStreamQueryUnknown) {
		t.Fatalf("another tenant read the state: %v", err)
	}
}

func joinKeys(keys []string) string {
	out := ""
	for i, k := range keys {
		if i > 0 {
			out += " "
		}
		out += k
	}
	return out
}

// Deleting the source queue drops the state of its partitions, and only
// theirs.
func TestStreamStateGoesWithItsQueue(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	a, b := push(t, db, write("a", "p", "a1")), push(t, db, write("b", "p", "b1"))
	qa, qb := register(t, db, tenancy.TenantID{}, "qa", "a", "h"), register(t, db, tenancy.TenantID{}, "qb", "b", "h")
	for _, c := range []struct {
		q   [16]byte
		pid int64
	}{{qa, a[0].PartitionID}, {qb, b[0].PartitionID}} {
		if _, err := db.StreamCycle(ctx, pgwire.StreamCycleRequest{Query: c.q, PartitionID: c.pid, Ops: []pgwire.StreamOp{upsert("k", "1")}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.DeleteQueue(ctx, tenancy.TenantID{}, "a"); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.stream_state WHERE partition_id = $1`, a[0].PartitionID); n != 0 {
		t.Fatalf("the deleted queue's state stayed: %d rows", n)
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.stream_state WHERE partition_id = $1`, b[0].PartitionID); n != 1 {
		t.Fatalf("another queue's state went: %d rows", n)
	}
}
