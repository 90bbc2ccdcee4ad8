package pgwire_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
)

// Config.LeaseTime (tests only) makes every lease last that many
// milliseconds, whatever the queue's leaseTime (300 s here) or the seconds
// an extension asks: a pop's lease, a hot tail claim's and an extension
// all end within a second, and a second claim takes the lease over once it
// has, polled instead of slept for. A DSN's queen.lease_ms does the same;
// without either, the queue's leaseTime holds.
func TestLeaseTimeInMilliseconds(t *testing.T) {
	t.Parallel()
	dsn := testenv.NewDatabase(t)
	testkit.OpenDB(t, dsn, 2) // migrated
	ctx := context.Background()
	for _, bad := range []time.Duration{-time.Second, 500 * time.Microsecond} {
		if _, err := pgwire.Open(ctx, pgwire.Config{DSN: dsn, LeaseTime: bad}); err == nil || !strings.Contains(err.Error(), "LeaseTime must be 0 (off) or at least 1ms") {
			t.Fatalf("LeaseTime %s: %v", bad, err)
		}
	}
	short, err := pgwire.Open(ctx, pgwire.Config{DSN: dsn, LeaseTime: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(short.Close)
	fromDSN := testkit.OpenDB(t, testenv.WithSetting(dsn, "queen.lease_ms", "150"), 2)
	plain := testkit.OpenDB(t, dsn, 2)
	setOptions(t, plain, "q", map[string]any{"leaseTime": 300})

	within := func(what string, at, expires time.Time, d time.Duration) {
		t.Helper()
		if expires.Before(at) || expires.After(at.Add(d)) {
			t.Fatalf("%s: lease expires %s, %s after it was taken (want at most %s)", what, expires, expires.Sub(at), d)
		}
	}
	for name, db := range map[string]*pgwire.DB{"config": short, "dsn": fromDSN} {
		push(t, plain, write("q", name, "a"))
		at := dbNow(t, plain)
		l := lease()
		first := pop(t, db, pgwire.PopRequest{Queue: "q", Partition: name, Group: "g", Lease: l})
		within(name+": pop", at, first.LeaseExpires, time.Second)
		exp, ok, err := db.ExtendLease(ctx, [16]byte{}, l, 60)
		if err != nil || !ok {
			t.Fatalf("%s: extend: %v %v", name, ok, err)
		}
		within(name+": extension", at, exp, time.Second)
		var again pgwire.PopResult
		testkit.WaitFor(t, name+": another claim to take the lease over", 30*time.Second, func() bool {
			again = pop(t, db, pgwire.PopRequest{Queue: "q", Partition: name, Group: "g", Lease: lease()})
			return again.Status == pgwire.PopDelivered
		})
		if !again.Expired || fmt.Sprint(txids(again.Messages)) != "[a]" {
			t.Fatalf("%s: the claim after the lease: %+v", name, again)
		}
	}

	// The hot tail's claim, on the tail fixture's partition of its own queue.
	f := newTailFixture(t, plain, "tail")
	setOptions(t, plain, "tail", map[string]any{"leaseTime": 300})
	at := dbNow(t, plain)
	out, err := popTail(ctx, short, pgwire.PopRequest{Group: "g", Lease: lease()}, f.claim)
	if err != nil || len(out) != 1 || out[0].Status != pgwire.PopDelivered {
		t.Fatalf("tail claim: %+v %v", out, err)
	}
	within("tail claim", at, out[0].LeaseExpires, time.Second)

	push(t, plain, write("q", "plain", "a"))
	at = dbNow(t, plain)
	if r := pop(t, plain, pgwire.PopRequest{Queue: "q", Partition: "plain", Group: "g", Lease: lease()}); r.LeaseExpires.Before(at.Add(299 * time.Second)) {
		t.Fatalf("without the setting the lease expires %s after it was taken, want the queue's 300 s", r.LeaseExpires.Sub(at))
	}
}

// dbNow is the database's clock, which lease expiries are set by.
func dbNow(t *testing.T, db *pgwire.DB) time.Time {
	t.Helper()
	var now time.Time
	if err := db.Pool().QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&now); err != nil {
		t.Fatal(err)
	}
	return now
}
