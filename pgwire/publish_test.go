package pgwire_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/pgwire"
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
