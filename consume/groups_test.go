package consume

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/pgwire"
)

// A seek or a delete tells the marks of every partition it changed,
// as a release that makes the partition deliverable again.
func TestGroupChangesReleaseTheirPartitions(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	parts := []pgwire.GroupPartition{{Queue: "q", Partition: "p1", PartitionID: 1, Cursor: 4}, {Queue: "q", Partition: "p2", PartitionID: 2}}
	var seeks []pgwire.SeekRequest
	r.store.groups = func(req *pgwire.SeekRequest) ([]pgwire.GroupPartition, error) {
		if req != nil {
			seeks = append(seeks, *req)
		}
		return parts, nil
	}
	want := []release{{"q", "p1", "g", true}, {"q", "p2", "g", true}}
	req := pgwire.SeekRequest{Tenant: tenant, Group: "g", Queue: "q", At: time.Unix(1, 0)}
	if got, err := r.c.SeekGroup(context.Background(), req); err != nil || !slices.Equal(got, parts) || !slices.Equal(seeks, []pgwire.SeekRequest{req}) {
		t.Fatalf("seek: %+v %v (asked %+v)", got, err, seeks)
	}
	if !slices.Equal(r.marks.released, want) {
		t.Fatalf("after the seek the marks heard %+v", r.marks.released)
	}
	r.marks.released = nil
	if got, err := r.c.DeleteGroup(context.Background(), tenant, "g", "", true); err != nil || len(got) != 2 {
		t.Fatalf("delete: %+v %v", got, err)
	}
	if !slices.Equal(r.marks.released, want) {
		t.Fatalf("after the delete the marks heard %+v", r.marks.released)
	}
}

// After a seek the hot tail does not steer the next pop to where the
// cursor was: it forgot the group's cursor, so the pop reads PostgreSQL
// without a refused tail claim, and learns the cursor again for the next.
func TestSeekForgetsTheTailsCursor(t *testing.T) {
	t.Parallel()
	db := openTailDB(t)
	a := newTailBridge(t, db)
	first := a.push("s", "p", "m1", "m2")
	pid := first.PartitionID
	a.wantPop("s", "p", 0, 0, "m1", "m2") // seeds the cursor row
	a.push("s", "p", "m3")
	a.wantPop("s", "p", 1, 0, "m3") // from memory
	if _, err := a.c.SeekGroup(context.Background(), pgwire.SeekRequest{Group: "g", Queue: "s", At: first.CreatedAt}); err != nil {
		t.Fatal(err)
	}
	if _, known := a.tail.Pending(pid, "g"); known {
		t.Fatal("the tail still knows the group's cursor after the seek")
	}
	a.wantPop("s", "p", 0, 0, "m3")
	if refused, _ := a.store.counts(); refused != 0 {
		t.Fatalf("%d tail claims refused", refused)
	}
	a.push("s", "p", "m4")
	a.wantPop("s", "p", 1, 0, "m4")

	if _, err := a.c.DeleteGroup(context.Background(), [16]byte{}, "g", "s", true); err != nil {
		t.Fatal(err)
	}
	if _, known := a.tail.Pending(pid, "g"); known {
		t.Fatal("the tail still knows the group's cursor after the delete")
	}
	a.wantPop("s", "p", 0, 0, "m1", "m2", "m3", "m4") // seeded again: from the beginning
	if refused, _ := a.store.counts(); refused != 0 {
		t.Fatalf("%d tail claims refused", refused)
	}
}
