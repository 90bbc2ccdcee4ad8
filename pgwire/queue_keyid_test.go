package pgwire_test

import (
	"context"
	"testing"

	"github.com/queenbridge/queenbridge/storage"
)

// A queue's key id only goes up: a bridge still sealing under an older key
// does not lower what a rotated bridge recorded. A queue without a row
// records nothing, and a queue never sealed under a key id reads as not
// keyed.
func TestRecordKeyIDKeepsTheHighest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := newDB(t)
	tenant := [16]byte{7}
	on := true
	if _, err := db.ConfigureQueue(ctx, tenant, "sealed", storage.QueueUpdate{EncryptionEnabled: &on}); err != nil {
		t.Fatal(err)
	}
	if q, err := db.LookupQueue(ctx, tenant, "sealed"); err != nil || q.Options.Keyed {
		t.Fatalf("before any seal: %+v, %v", q.Options, err)
	}
	for _, step := range []struct{ record, want uint8 }{{1, 1}, {2, 2}, {1, 2}} {
		q, found, err := db.RecordKeyID(ctx, tenant, "sealed", step.record)
		if err != nil || !found || !q.Options.Keyed || q.Options.KeyID != step.want || !q.Options.EncryptionEnabled {
			t.Fatalf("record %d: %+v found %v, %v; want key id %d", step.record, q.Options, found, err, step.want)
		}
	}
	if q, err := db.LookupQueue(ctx, tenant, "sealed"); err != nil || !q.Options.Keyed || q.Options.KeyID != 2 {
		t.Fatalf("looked up: %+v, %v", q.Options, err)
	}
	if _, found, err := db.RecordKeyID(ctx, tenant, "nowhere", 3); err != nil || found {
		t.Fatalf("a queue without a row: found %v, %v", found, err)
	}
}
