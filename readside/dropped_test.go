package readside

import (
	"context"
	"testing"
	"time"
)

// A deleted queue's parked reads and pops answer at once, empty; those of
// other queues, and of the same name under another tenant, stay parked.
func TestDroppedAnswersParkedLooksAtOnce(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	r := startReads(t, Config{DB: db})
	tenant := [16]byte{7}
	read, pop := &looker{}, &looker{}
	readDone := parkLook(t, r, context.Background(), Key{Tenant: tenant, Queue: "gone", Partition: "p"}, time.Hour, read)
	popDone := parkLook(t, r, context.Background(), Key{Tenant: tenant, Queue: "gone"}, time.Hour, pop)
	stays := &looker{}
	staysDone := parkLook(t, r, context.Background(), Key{Queue: "gone", Partition: "p"}, time.Hour, stays)

	r.Dropped(tenant, "gone")
	for name, done := range map[string]<-chan lookResult{"read": readDone, "pop": popDone} {
		if res := answer(t, done, "Dropped"); res.err != nil || res.v != 0 {
			t.Fatalf("%s: %+v", name, res)
		}
	}
	if read.calls.Load() != 2 || pop.calls.Load() != 2 {
		t.Fatalf("a dropped look looked again: %d, %d", read.calls.Load(), pop.calls.Load())
	}
	select {
	case res := <-staysDone:
		t.Fatalf("another tenant's look answered: %+v", res)
	default:
	}
	r.Dropped([16]byte{}, "gone")
	if res := answer(t, staysDone, "Dropped"); res.err != nil || res.v != 0 {
		t.Fatalf("stays: %+v", res)
	}
}
