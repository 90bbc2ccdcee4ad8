package pgwire_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/segment"
)

// Readiness names what a database lacks for the publish relay: here a
// role without REPLICATION; a superuser lacks nothing on the test cluster
// (wal_level=logical).
func TestReadinessNamesWhatIsMissing(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.NewDatabase(t)
	db := openDSN(t, dsn)
	name, missing, err := pgwire.Readiness(ctx, dsn)
	if err != nil || len(missing) != 0 {
		t.Fatalf("superuser: %v %v", missing, err)
	}
	if want, _ := pgwire.DatabaseOf(dsn); name != want {
		t.Fatalf("database %q, want %q", name, want)
	}
	role := "norep_" + strings.TrimPrefix(name, "t_")
	if _, err := db.Pool().Exec(ctx, `CREATE ROLE `+role+` LOGIN NOREPLICATION PASSWORD 'pw'`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db.Pool().Exec(context.Background(), `DROP ROLE `+role) })
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "pw")
	_, missing, err = pgwire.Readiness(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) != 1 || !strings.Contains(missing[0], "REPLICATION") {
		t.Fatalf("a role without REPLICATION: missing %q", missing)
	}
}

// The relay's position never moves back, and is kept per slot.
func TestRelayPositionOnlyMovesForward(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	if lsn, err := db.RelayPosition(ctx, "sys/a"); err != nil || lsn != 0 {
		t.Fatalf("none stored: %d %v", lsn, err)
	}
	for _, lsn := range []uint64{100, 50, 200} {
		if err := db.SaveRelayPosition(ctx, "sys/a", lsn); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.SaveRelayPosition(ctx, "sys/b", 7); err != nil {
		t.Fatal(err)
	}
	a, errA := db.RelayPosition(ctx, "sys/a")
	b, errB := db.RelayPosition(ctx, "sys/b")
	if a != 200 || b != 7 || errA != nil || errB != nil {
		t.Fatalf("positions %d %d (%v %v), want 200 7", a, b, errA, errB)
	}
}

// SlotName keeps to what a slot name may hold.
func TestSlotName(t *testing.T) {
	for in, want := range map[string]string{
		"app":                   "queen_publish_app",
		"My-App.db":             "queen_publish_my_app_db",
		strings.Repeat("x", 80): "queen_publish_" + strings.Repeat("x", 63-len("queen_publish_")),
	} {
		if got := pgwire.SlotName(in); got != want {
			t.Errorf("SlotName(%q) = %q, want %q", in, got, want)
		}
	}
}

// A bundle's relay marks are stored by the transaction that stores their
// segments: a queued segment moves its partition's mark (per slot, never
// back), a duplicate segment, which writes nothing, moves none; a bundle
// without marks writes none.
func TestRelayMarksAreStoredWithTheirSegments(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	marked := func(w segment.Write, marks ...segment.Mark) segment.Write {
		w.Marks = marks
		return w
	}
	m := func(slot string, lsn uint64, idx int32) segment.Mark {
		return segment.Mark{Slot: slot, LSN: lsn, Index: idx}
	}
	push(t, db, write("q", "plain", "0"))
	res := push(t, db,
		marked(write("q", "a", "a1", "a2"), m("s/1", 100, 1)),
		marked(write("q", "b", "b1"), m("s/1", 100, 2), m("s/2", 7, 0)),
		write("q", "plain", "1"))
	for i, r := range res {
		if r.Status != segment.Queued {
			t.Fatalf("segment %d: %v", i, r.Status)
		}
	}
	// a: a later mark moves it, an earlier one does not; b: a duplicate
	// segment carrying a later mark moves nothing.
	push(t, db, marked(write("q", "a", "a3"), m("s/1", 200, 0)))
	// The known-partition statement (ids known, nothing to probe) stores
	// marks too: alone, and beside an ordinary segment.
	known := func(w segment.Write, r segment.Result, last int64) segment.Write {
		w.PartitionID, w.QueueID, w.Verified = r.PartitionID, r.QueueID, last
		return w
	}
	a4 := push(t, db, marked(known(write("q", "a", "a4"), res[0], lastOffset(t, db, "q", "a")), m("s/1", 150, 9)))[0]
	push(t, db,
		marked(known(write("q", "a", "a5"), a4, lastOffset(t, db, "q", "a")), m("s/3", 9, 1)),
		known(write("q", "plain", "2"), res[2], lastOffset(t, db, "q", "plain")))
	if r := push(t, db, marked(write("q", "b", "b1"), m("s/1", 300, 0)))[0]; r.Status != segment.Duplicate {
		t.Fatalf("a repeat of b1: %v, want duplicate", r.Status)
	}
	got := map[string]string{}
	for _, key := range []string{"s/1", "s/2", "s/3"} {
		marks, err := db.RelayMarks(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		for _, mk := range marks {
			got[key+" "+mk.Queue+"/"+mk.Partition] = fmt.Sprintf("%d/%d", mk.LSN, mk.Index)
		}
	}
	want := map[string]string{"s/1 q/a": "200/0", "s/1 q/b": "100/2", "s/2 q/b": "7/0", "s/3 q/a": "9/1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("marks %v, want %v", got, want)
	}
}
