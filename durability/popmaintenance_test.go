package durability_test

import (
	"context"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/durability"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// Pop maintenance is a switch of its own: stored, applied at once,
// broadcast on its own subject (a bridge that never re-reads the database
// switches with it), read at Start, and re-read by the poll; it never
// moves maintenance mode.
func TestPopMaintenanceStoredBroadcastAndPolled(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	f := startFusion(t, db)
	pfx := prefix()
	never := time.Hour
	a := startKeeper(t, durability.Config{DB: db, Fusion: f, Peers: link(t, pfx, "a"), MaintenancePoll: never, RetentionInterval: -1})
	b := startKeeper(t, durability.Config{DB: db, Fusion: f, Peers: link(t, pfx, "b"), MaintenancePoll: never, RetentionInterval: -1})
	if a.PopMaintenance() || b.PopMaintenance() {
		t.Fatal("pop maintenance on in a new database")
	}
	if err := a.SetPopMaintenance(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if !a.PopMaintenance() || !a.Stats().PopMaintenance || a.Maintenance() {
		t.Fatalf("after SetPopMaintenance(true): pop %v, maintenance %v", a.PopMaintenance(), a.Maintenance())
	}
	testkit.WaitFor(t, "b to hear pop maintenance on", time.Minute, b.PopMaintenance)
	if sw, err := db.ReadSwitches(context.Background()); err != nil || !sw.PopMaintenance || sw.Maintenance {
		t.Fatalf("stored switches: %+v %v", sw, err)
	}
	c := startKeeper(t, durability.Config{DB: db, Fusion: f, Peers: link(t, pfx, "c"), MaintenancePoll: never, RetentionInterval: -1})
	if !c.PopMaintenance() || c.Maintenance() {
		t.Fatal("a bridge started during pop maintenance did not read it")
	}
	if err := a.SetPopMaintenance(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "b and c to hear pop maintenance off", time.Minute, func() bool { return !b.PopMaintenance() && !c.PopMaintenance() })

	// Without NATS, the poll.
	polled := startKeeper(t, durability.Config{DB: db, Fusion: f, MaintenancePoll: 10 * time.Millisecond, RetentionInterval: -1})
	if err := db.SetPopMaintenance(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the poll to read pop maintenance on", time.Minute, polled.PopMaintenance)
	if polled.Maintenance() || b.Maintenance() {
		t.Fatal("pop maintenance switched maintenance mode")
	}
}
