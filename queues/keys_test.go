package queues

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/storage"
)

// A rotation half rolled out: the bridge given key 2 records it on the
// queue with its first push, and from then on a bridge holding only key 1,
// or no key, refuses the queue's pops by name and key id, while plaintext
// queues stay plaintext everywhere. A bridge sealing under the older key
// does not lower the queue's key id.
func TestSealedRefusesABridgeWithoutTheQueuesKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testkit.OpenDB(t, testenv.NewDatabase(t), 2)
	tenant := [16]byte{5}
	on := true
	if _, err := db.ConfigureQueue(ctx, tenant, "vault", storage.QueueUpdate{EncryptionEnabled: &on}); err != nil {
		t.Fatal(err)
	}
	k1, k2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	settings := func(keys map[uint8][]byte) *Settings {
		s, err := New(Config{DB: db, EncryptionKeys: keys})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	old, rotated, none := settings(map[uint8][]byte{1: k1}), settings(map[uint8][]byte{1: k1, 2: k2}), settings(nil)

	if err := old.EncryptionFor(ctx, tenant, "vault"); err != nil {
		t.Fatal(err)
	}
	if sealed, err := old.Sealed(ctx, tenant, "vault"); !sealed || err != nil {
		t.Fatalf("before the rotation: sealed %v, %v", sealed, err)
	}
	if err := rotated.EncryptionFor(ctx, tenant, "vault"); err != nil {
		t.Fatal(err)
	}
	if q, err := db.LookupQueue(ctx, tenant, "vault"); err != nil || !q.Options.Keyed || q.Options.KeyID != 2 {
		t.Fatalf("after a push through the rotated bridge the queue records %+v, %v; want key id 2", q.Options, err)
	}
	old.cache.forget(key{tenant, "vault"}) // as its cache TTL ends
	if err := old.EncryptionFor(ctx, tenant, "vault"); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*Settings{"key 1 only": old, "no key": none} {
		sealed, err := s.Sealed(ctx, tenant, "vault")
		if !sealed || !errors.Is(err, ErrMissingKey) || !strings.Contains(err.Error(), `queue "vault"`) || !strings.Contains(err.Error(), "key id 2") {
			t.Errorf("%s: sealed %v, %v; want a refusal naming the queue and key id 2", name, sealed, err)
		}
	}
	if sealed, err := rotated.Sealed(ctx, tenant, "vault"); !sealed || err != nil {
		t.Errorf("the rotated bridge: sealed %v, %v", sealed, err)
	}
	for _, s := range []*Settings{old, none} {
		if sealed, err := s.Sealed(ctx, tenant, "open"); sealed || err != nil {
			t.Errorf("a plaintext queue: sealed %v, %v", sealed, err)
		}
	}
}
