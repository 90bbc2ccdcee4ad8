package pgwire_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/storage"
)

// tailFixture is a partition as a bridge's hot tail would serve it: the
// group's cursor row exists at 1 (x0 acknowledged), and three segments
// follow, a b (2..3), c d (4..5), e (6), which the claim delivers whole.
type tailFixture struct {
	db    *pgwire.DB
	queue string
	pid   int64
	claim pgwire.TailClaim
}

func newTailFixture(t *testing.T, db *pgwire.DB, queue string) *tailFixture {
	t.Helper()
	push(t, db, write(queue, "p", "x0"))
	l := lease()
	r := pop(t, db, pgwire.PopRequest{Queue: queue, Partition: "p", Group: "g", Lease: l})
	if a := ack(t, db, r.PartitionID, "g", &l, completed("x0")...); !a.Released || a.Cursor != 1 {
		t.Fatalf("seeding the cursor: %+v", a)
	}
	push(t, db, write(queue, "p", "a", "b"))
	push(t, db, write(queue, "p", "c", "d"))
	push(t, db, write(queue, "p", "e"))
	return &tailFixture{db: db, queue: queue, pid: r.PartitionID, claim: pgwire.TailClaim{PartitionID: r.PartitionID,
		Cursor: 1, To: 6, Count: 5, Hashes: pgwire.AckHashes([]string{"a", "b", "c", "d", "e"}), FirstEnd: 3}}
}

// popTail claims cs for req's tenant, group, lease and auto-ack.
func popTail(ctx context.Context, db *pgwire.DB, req pgwire.PopRequest, cs ...pgwire.TailClaim) ([]pgwire.PopResult, error) {
	for i := range cs {
		cs[i].Tenant, cs[i].Group, cs[i].Lease, cs[i].AutoAck = req.Tenant, req.Group, req.Lease, req.AutoAck
	}
	return db.PopTail(ctx, cs)
}

// row is everything a claim could write on the group's cursor row,
// with the row version's xmin and xmax: an UPDATE makes a new version, a
// row lock sets xmax. "" when there is no row.
func (f *tailFixture) row(t *testing.T, group string) string {
	t.Helper()
	var s string
	err := f.db.Pool().QueryRow(context.Background(), `SELECT concat_ws('|', xmin::text, xmax::text, cursor_offset,
		coalesce(lease_id::text, '-'), coalesce(lease_expires_at::text, '-'), delivered_to, delivered_count, acked_count,
		retry_count, coalesce(encode(delivered_hashes, 'hex'), '-'), updated_at::text)
		FROM queen.consumer_cursors WHERE partition_id = $1 AND consumer_group = $2`, f.pid, group).Scan(&s)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		t.Fatal(err)
	}
	return s
}

// refused claims c for group (tenant zero unless given) and wants it not
// applied, with nothing written; then a pop through PostgreSQL delivers
// want.
func (f *tailFixture) refused(t *testing.T, req pgwire.PopRequest, c pgwire.TailClaim, want string) {
	t.Helper()
	before := f.row(t, "g")
	if req.Group == "" {
		req.Group = "g"
	}
	req.Lease = lease()
	out, err := popTail(context.Background(), f.db, req, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].Status != "" {
		t.Fatalf("claim applied: %+v", out)
	}
	if after := f.row(t, "g"); after != before {
		t.Fatalf("a refused claim wrote the cursor row:\n before %s\n after  %s", before, after)
	}
	if req.Group != "g" && f.row(t, req.Group) != "" {
		t.Fatalf("a refused claim made a cursor row for %q", req.Group)
	}
	r := pop(t, f.db, pgwire.PopRequest{PartitionID: f.pid, Group: "g", Lease: lease(), Batch: 10})
	if r.Status != pgwire.PopDelivered || fmt.Sprint(txids(r.Messages)) != want {
		t.Fatalf("the pop through PostgreSQL after the refused claim: %+v, want %s", r, want)
	}
}

// A claim served from memory applies only when everything memory cannot
// know holds: the cursor is where the bridge saw it, no live lease, no
// delayedProcessing or windowBuffer, the first delivered segment still
// stored, the cursor row there, the tenant's queue. Otherwise it answers no
// row and writes nothing (no row version, no row lock), and the pop through
// PostgreSQL delivers what is there, once.
func TestTailClaimAppliesOnlyWhenEverythingHolds(t *testing.T) {
	inEachForm(t, tailClaimAppliesOnlyWhenEverythingHolds)
}

func tailClaimAppliesOnlyWhenEverythingHolds(t *testing.T, db *pgwire.DB) {
	ctx := context.Background()

	t.Run("applies", func(t *testing.T) {
		t.Parallel()
		f := newTailFixture(t, db, "t-ok")
		l := lease()
		out, err := popTail(ctx, db, pgwire.PopRequest{Group: "g", Lease: l}, f.claim)
		if err != nil {
			t.Fatal(err)
		}
		if r := out[0]; r.Status != pgwire.PopDelivered || r.Partition != "p" || r.Cursor != 1 || r.To != 6 || r.Last != 6 || r.LeaseExpires.IsZero() || r.Expired {
			t.Fatalf("claim: %+v", out)
		}
		var cursor, to int64
		var n int
		var leaseID uuid.UUID
		var hashes []byte
		if err := db.Pool().QueryRow(ctx, `SELECT cursor_offset, delivered_to, delivered_count, lease_id, delivered_hashes
			FROM queen.consumer_cursors WHERE partition_id = $1 AND consumer_group = 'g'`, f.pid).Scan(&cursor, &to, &n, &leaseID, &hashes); err != nil {
			t.Fatal(err)
		}
		if cursor != 1 || to != 6 || n != 5 || leaseID != uuid.UUID(l) || !bytes.Equal(hashes, pgwire.Digest(f.claim.Hashes)) {
			t.Fatalf("row after the claim: cursor %d, delivered to %d, %d delivered, lease %v", cursor, to, n, leaseID)
		}
		if r := pop(t, db, pgwire.PopRequest{PartitionID: f.pid, Group: "g"}); r.Status != pgwire.PopLeased {
			t.Fatalf("a pop while the claimed lease lives: %+v", r)
		}
		// What the claim recorded is what a whole-batch acknowledgement of
		// the delivered messages checks against.
		res, err := db.AckWhole(ctx, []pgwire.WholeAck{{PID: f.pid, Group: "g", Lease: l, Status: "completed",
			TransactionIDs: []string{"a", "b", "c", "d", "e"}, Errors: make([]string, 5)}})
		if err != nil || !res[0].Applied || res[0].Cursor != 6 {
			t.Fatalf("whole-batch ack of the claimed delivery: %+v %v", res, err)
		}
	})

	t.Run("stale cursor", func(t *testing.T) {
		t.Parallel()
		f := newTailFixture(t, db, "t-stale")
		// Another bridge's consumer took a and b and acknowledged them: the
		// cursor moved to 3 after this bridge saw it at 1.
		l := lease()
		r := pop(t, db, pgwire.PopRequest{PartitionID: f.pid, Group: "g", Lease: l, Batch: 2})
		if a := ack(t, db, f.pid, "g", &l, completed(txids(r.Messages)...)...); !a.Released || a.Cursor != 3 {
			t.Fatalf("the other bridge's ack: %+v", a)
		}
		f.refused(t, pgwire.PopRequest{}, f.claim, "[c d e]")
	})

	t.Run("a tombstoned offset", func(t *testing.T) {
		t.Parallel()
		f := newTailFixture(t, db, "t-tomb")
		// c was deleted after the bridge took the segments into memory:
		// the frames there cannot tell, the claim's probe can.
		if ok, err := db.DeleteMessage(ctx, [16]byte{}, f.pid, "c"); err != nil || !ok {
			t.Fatalf("delete c: %v %v", ok, err)
		}
		f.refused(t, pgwire.PopRequest{}, f.claim, "[a b d e]")
		// Past the tombstone, claims from memory apply again.
		c := pgwire.TailClaim{PartitionID: f.pid, Cursor: 6, To: 7, Count: 1, Hashes: pgwire.AckHashes([]string{"f"}), FirstEnd: 7}
		push(t, db, write(f.queue, "p", "f"))
		if a := ack(t, db, f.pid, "g", nil, completed("a", "b", "d", "e")...); a.Cursor != 6 {
			t.Fatalf("ack: %+v", a)
		}
		if out, err := popTail(ctx, db, pgwire.PopRequest{Group: "g", Lease: lease()}, c); err != nil || out[0].Status != pgwire.PopDelivered {
			t.Fatalf("a claim after the tombstone: %+v %v", out, err)
		}
	})

	t.Run("live lease", func(t *testing.T) {
		t.Parallel()
		f := newTailFixture(t, db, "t-leased")
		// Another consumer holds a and b: the cursor is still 1.
		l := lease()
		if r := pop(t, db, pgwire.PopRequest{PartitionID: f.pid, Group: "g", Lease: l, Batch: 2}); fmt.Sprint(txids(r.Messages)) != "[a b]" {
			t.Fatalf("the other consumer's pop: %+v", r)
		}
		before := f.row(t, "g")
		out, err := popTail(ctx, db, pgwire.PopRequest{Group: "g", Lease: lease()}, f.claim)
		if err != nil || out[0].Status != "" {
			t.Fatalf("claim under a live lease: %+v %v", out, err)
		}
		if after := f.row(t, "g"); after != before {
			t.Fatalf("a refused claim wrote the cursor row:\n before %s\n after  %s", before, after)
		}
		if a := ack(t, db, f.pid, "g", &l, completed("a", "b")...); !a.Released || a.Cursor != 3 {
			t.Fatalf("the lease holder's ack after the refused claim: %+v", a)
		}
	})

	t.Run("auto-ack", func(t *testing.T) {
		t.Parallel()
		f := newTailFixture(t, db, "t-auto")
		out, err := popTail(ctx, db, pgwire.PopRequest{Group: "g", AutoAck: true}, f.claim)
		if err != nil || out[0].Status != pgwire.PopDelivered || out[0].To != 6 {
			t.Fatalf("auto-ack claim: %+v %v", out, err)
		}
		// Consumed: the cursor moved, no lease, nothing left to pop.
		var cursor int64
		var leased bool
		if err := db.Pool().QueryRow(ctx, `SELECT cursor_offset, lease_id IS NOT NULL FROM queen.consumer_cursors
			WHERE partition_id = $1 AND consumer_group = 'g'`, f.pid).Scan(&cursor, &leased); err != nil || cursor != 6 || leased {
			t.Fatalf("row after an auto-ack claim: cursor %d, leased %v, %v", cursor, leased, err)
		}
		if r := pop(t, db, pgwire.PopRequest{PartitionID: f.pid, Group: "g"}); r.Status != pgwire.PopEmpty {
			t.Fatalf("pop after an auto-ack claim: %+v", r)
		}
	})

	t.Run("expired lease", func(t *testing.T) {
		t.Parallel()
		f := newTailFixture(t, db, "t-expired")
		// Another consumer held a to e and its lease ran out: the claim
		// takes the delivery over and says so.
		if r := pop(t, db, pgwire.PopRequest{PartitionID: f.pid, Group: "g", Lease: lease(), Batch: 10}); r.To != 6 {
			t.Fatalf("the other consumer's pop: %+v", r)
		}
		if _, err := db.Pool().Exec(ctx, `UPDATE queen.consumer_cursors SET lease_expires_at = clock_timestamp() - interval '1 second'
			WHERE partition_id = $1 AND consumer_group = 'g'`, f.pid); err != nil {
			t.Fatal(err)
		}
		out, err := popTail(ctx, db, pgwire.PopRequest{Group: "g", Lease: lease()}, f.claim)
		if err != nil || out[0].Status != pgwire.PopDelivered || !out[0].Expired || out[0].To != 6 {
			t.Fatalf("claim over an expired lease: %+v %v", out, err)
		}
	})

	t.Run("first segment removed by retention", func(t *testing.T) {
		t.Parallel()
		f := newTailFixture(t, db, "t-retained")
		kept := newTailFixture(t, db, "t-retained-not")
		// Retention removes x0 and a b (oldest first); c d and e stay.
		if _, err := db.ConfigureQueue(ctx, [16]byte{}, f.queue, storage.QueueUpdate{RetentionSeconds: ptr32(60), DedupWindowSeconds: ptr32(0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Pool().Exec(ctx, `UPDATE queen.log_segments SET created_at = created_at - interval '2 minutes'
			WHERE partition_id = $1 AND end_offset <= 3`, f.pid); err != nil {
			t.Fatal(err)
		}
		if _, err := db.RetentionStep(ctx, 64, 1000); err != nil {
			t.Fatal(err)
		}
		if n := count(t, db.Pool(), `SELECT count(*) FROM queen.log_segments WHERE partition_id = $1`, f.pid); n != 2 {
			t.Fatalf("%d segments left, want c d and e", n)
		}
		// Alone, and claimed together with a partition whose segments are
		// all there: only that one applies.
		before := f.row(t, "g")
		if out, err := popTail(ctx, db, pgwire.PopRequest{Group: "g", Lease: lease()}, f.claim); err != nil || out[0].Status != "" {
			t.Fatalf("lone claim after retention: %+v %v", out, err)
		}
		out, err := popTail(ctx, db, pgwire.PopRequest{Group: "g", Lease: lease()}, f.claim, kept.claim)
		if err != nil || len(out) != 2 || out[0].Status != "" || out[1].Status != pgwire.PopDelivered || out[1].PartitionID != kept.pid {
			t.Fatalf("claims: %+v %v", out, err)
		}
		if after := f.row(t, "g"); after != before {
			t.Fatalf("a refused claim wrote the cursor row:\n before %s\n after  %s", before, after)
		}
		r := pop(t, db, pgwire.PopRequest{PartitionID: f.pid, Group: "g", Lease: lease(), Batch: 10})
		if fmt.Sprint(txids(r.Messages)) != "[c d e]" || r.Messages[0].Offset != 4 {
			t.Fatalf("the pop through PostgreSQL after retention: %+v", r)
		}
	})

	for _, opt := range []string{"delayedProcessing", "windowBuffer"} {
		t.Run(opt, func(t *testing.T) {
			t.Parallel()
			f := newTailFixture(t, db, "t-"+opt)
			setOptions(t, db, f.queue, map[string]any{opt: 60})
			before := f.row(t, "g")
			if out, err := popTail(ctx, db, pgwire.PopRequest{Group: "g", Lease: lease()}, f.claim); err != nil || out[0].Status != "" {
				t.Fatalf("claim on a queue with %s: %+v %v", opt, out, err)
			}
			if after := f.row(t, "g"); after != before {
				t.Fatalf("a refused claim wrote the cursor row:\n before %s\n after  %s", before, after)
			}
		})
	}

	t.Run("another group or tenant", func(t *testing.T) {
		t.Parallel()
		f := newTailFixture(t, db, "t-who")
		// A group with no cursor row yet: its first pop seeds one (its
		// subscription), a claim from memory cannot.
		f.refused(t, pgwire.PopRequest{Group: "fresh"}, f.claim, "[a b c d e]")
		f2 := newTailFixture(t, db, "t-who2")
		f2.refused(t, pgwire.PopRequest{Tenant: tenancy.TenantID(uuid.New())}, f2.claim, "[a b c d e]")
	})

	t.Run("a cursor the bridge saw earlier", func(t *testing.T) {
		t.Parallel()
		f := newTailFixture(t, db, "t-earlier")
		c := f.claim
		c.Cursor, c.Count, c.Hashes = 0, 6, pgwire.AckHashes([]string{"x0", "a", "b", "c", "d", "e"})
		c.FirstEnd = 1
		f.refused(t, pgwire.PopRequest{}, c, "[a b c d e]")
	})
}

// One call claims for several pops at once (the consume room fuses
// concurrent pops' claims): each claim with its own tenant, group, lease
// and auto-ack. A claim of another tenant's queue applies to nothing, and
// two claims of one row apply one of them.
func TestTailClaimsOfSeveralPopsInOneCall(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	f := newTailFixture(t, db, "t-many")
	if h := pop(t, db, pgwire.PopRequest{Queue: "t-many", Partition: "p", Group: "h", AutoAck: true, Batch: 1}); h.Status != pgwire.PopDelivered || h.To != 1 {
		t.Fatalf("seeding h's cursor: %+v", h)
	}
	l := lease()
	g := f.claim
	g.Group, g.Lease = "g", l
	h := f.claim
	h.Group, h.AutoAck = "h", true
	other := g
	other.Tenant = [16]byte{1}
	out, err := db.PopTail(ctx, []pgwire.TailClaim{other, h, g, g})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 4 || out[0].Status != "" || out[1].Status != pgwire.PopDelivered || !out[1].LeaseExpires.IsZero() ||
		(out[2].Status == pgwire.PopDelivered) == (out[3].Status == pgwire.PopDelivered) {
		t.Fatalf("answers %+v: want another tenant's refused, h's applied without a lease, one of g's two", out)
	}
	for _, c := range []struct {
		group  string
		cursor int64
		lease  string
	}{{"g", 1, uuid.UUID(l).String()}, {"h", 6, "-"}} {
		var cursor, to int64
		var leaseID string
		if err := db.Pool().QueryRow(ctx, `SELECT cursor_offset, delivered_to, coalesce(lease_id::text, '-') FROM queen.consumer_cursors
			WHERE partition_id = $1 AND consumer_group = $2`, f.pid, c.group).Scan(&cursor, &to, &leaseID); err != nil {
			t.Fatal(err)
		}
		if cursor != c.cursor || to != 6 || leaseID != c.lease {
			t.Errorf("%s: cursor %d, delivered to %d, lease %s; want %d, 6, %s", c.group, cursor, to, leaseID, c.cursor, c.lease)
		}
	}
}
