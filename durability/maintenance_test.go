package durability_test

import (
	"context"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/durability"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// SetMaintenance stores the flag in PostgreSQL, applies it at once and
// broadcasts it: a bridge that never re-reads the database switches with
// it, both ways, and a bridge that starts later reads it at Start.
func TestMaintenanceStoredAndBroadcast(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	f := startFusion(t, db)
	pfx := prefix()
	never := time.Hour // the poll does not run during the test: only the broadcast can switch
	a := startKeeper(t, durability.Config{DB: db, Fusion: f, Peers: link(t, pfx, "a"), MaintenancePoll: never, RetentionInterval: -1})
	b := startKeeper(t, durability.Config{DB: db, Fusion: f, Peers: link(t, pfx, "b"), MaintenancePoll: never, RetentionInterval: -1})
	if a.Maintenance() || b.Maintenance() {
		t.Fatal("maintenance on in a new database")
	}
	if err := a.SetMaintenance(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if !a.Maintenance() || !a.Stats().Maintenance {
		t.Fatal("SetMaintenance(true) did not apply to its own bridge")
	}
	if on, err := db.Maintenance(context.Background()); err != nil || !on {
		t.Fatalf("the stored flag: %v %v", on, err)
	}
	testkit.WaitFor(t, "b to hear maintenance on", time.Minute, b.Maintenance)

	c := startKeeper(t, durability.Config{DB: db, Fusion: f, Peers: link(t, pfx, "c"), MaintenancePoll: never, RetentionInterval: -1})
	if !c.Maintenance() {
		t.Fatal("a bridge started during maintenance did not read the flag")
	}

	if err := a.SetMaintenance(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if a.Maintenance() {
		t.Fatal("SetMaintenance(false) did not apply to its own bridge")
	}
	testkit.WaitFor(t, "b and c to hear maintenance off", time.Minute, func() bool { return !b.Maintenance() && !c.Maintenance() })
	if on, err := db.Maintenance(context.Background()); err != nil || on {
		t.Fatalf("the stored flag: %v %v", on, err)
	}
}

// Without NATS the flag still reaches a bridge: it re-reads it every
// MaintenancePoll.
func TestMaintenancePollIsTheBackstop(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	k := startKeeper(t, durability.Config{DB: db, Fusion: startFusion(t, db), MaintenancePoll: 10 * time.Millisecond, RetentionInterval: -1})
	if err := db.SetMaintenance(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the poll to read maintenance on", time.Minute, k.Maintenance)
	if err := db.SetMaintenance(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the poll to read maintenance off", time.Minute, func() bool { return !k.Maintenance() })
	if err := k.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := k.Stop(context.Background()); err != nil {
		t.Fatalf("a second Stop: %v", err)
	}
}
