package queues

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/storage"
)

// fakeStore is the queues table in memory, counting the calls made of it.
// Settings may call it from any request goroutine, so a mutex guards it.
type fakeStore struct {
	mu         sync.Mutex
	queues     map[string]storage.Queue
	fail       error // answered by every call while set
	lookups    int
	configures int
}

func newFakeStore() *fakeStore { return &fakeStore{queues: map[string]storage.Queue{}} }

func (f *fakeStore) LookupQueue(_ context.Context, _ tenancy.TenantID, name string) (storage.Queue, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups++
	if f.fail != nil {
		return storage.Queue{}, f.fail
	}
	return f.queues[name], nil
}

func (f *fakeStore) ConfigureQueue(_ context.Context, tenant tenancy.TenantID, name string, upd storage.QueueUpdate) (storage.Queue, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.configures++
	if f.fail != nil {
		return storage.Queue{}, f.fail
	}
	q := f.queues[name]
	q.Tenant, q.Name, q.Exists = tenant, name, true
	if upd.EncryptionEnabled != nil {
		q.Options.EncryptionEnabled = *upd.EncryptionEnabled
	}
	if upd.DedupWindowSeconds != nil {
		q.Options.DedupWindowSeconds = *upd.DedupWindowSeconds
	}
	if len(upd.Other) > 0 {
		q.OtherOptions = upd.Other
	}
	f.queues[name] = q
	return q, nil
}

func (f *fakeStore) RecordKeyID(_ context.Context, _ tenancy.TenantID, name string, id uint8) (storage.Queue, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, ok := f.queues[name]
	if !ok {
		return q, false, nil
	}
	q.Options.Keyed, q.Options.KeyID = true, id
	f.queues[name] = q
	return q, true, nil
}

func (f *fakeStore) calls() (lookups, configures int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lookups, f.configures
}

// A queue's settings are read once per TTL; Configure answers from what it
// wrote (the options it does not act on listed, sorted) and caches it, and
// a configure that asks for encryption on a bridge without a key is
// refused before anything is written.
func TestSettingsOnStore(t *testing.T) {
	t.Parallel()
	ctx, tenant := context.Background(), tenancy.TenantID{1}
	store := newFakeStore()
	store.queues["q"] = storage.Queue{Name: "q", Options: storage.QueueOptions{DedupWindowSeconds: 60}, Exists: true}
	s, err := New(Config{DB: store, CacheTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if o, err := s.Options(ctx, tenant, "q"); err != nil || o.DedupWindowSeconds != 60 {
			t.Fatalf("options %+v, %v", o, err)
		}
	}
	if n, _ := store.calls(); n != 1 {
		t.Fatalf("%d look-ups for three reads within the TTL, want 1", n)
	}

	on := true
	if _, err := s.Configure(ctx, tenant, "q", storage.QueueUpdate{EncryptionEnabled: &on}); !errors.Is(err, ErrNoKey) {
		t.Fatalf("encryption without a key: %v, want ErrNoKey", err)
	}
	if _, n := store.calls(); n != 0 {
		t.Fatalf("a refused configure reached the store %d times", n)
	}

	win := int32(5)
	ch, err := s.Configure(ctx, tenant, "r", storage.QueueUpdate{DedupWindowSeconds: &win,
		Other: map[string]json.RawMessage{"zeta": json.RawMessage(`1`), "leaseTime": json.RawMessage(`30`), "alpha": json.RawMessage(`2`)}})
	if err != nil || !ch.Configured || ch.Options.DedupWindowSeconds != 5 || !slices.Equal(ch.NotActedOn, []string{"alpha", "zeta"}) {
		t.Fatalf("configure answered %+v, %v", ch, err)
	}
	store.mu.Lock()
	store.fail = errors.New("database down")
	store.mu.Unlock()
	if o, err := s.Options(ctx, tenant, "r"); err != nil || o.DedupWindowSeconds != 5 {
		t.Fatalf("configured queue not cached: %+v, %v", o, err)
	}
	if _, err := s.Options(ctx, tenant, "never-seen"); err == nil {
		t.Fatal("a queue never cached read without its store")
	}
}

// A queue sealed under a key id this bridge lacks is refused by Sealed with
// ErrMissingKey naming the key id and the ids held; one sealed under a held
// key is not.
func TestSealedOnStore(t *testing.T) {
	t.Parallel()
	ctx, tenant := context.Background(), tenancy.TenantID{2}
	store := newFakeStore()
	store.queues["held"] = storage.Queue{Name: "held", Options: storage.QueueOptions{EncryptionEnabled: true, Keyed: true, KeyID: 1}, Exists: true}
	store.queues["lost"] = storage.Queue{Name: "lost", Options: storage.QueueOptions{EncryptionEnabled: true, Keyed: true, KeyID: 9}, Exists: true}
	s, err := New(Config{DB: store, CacheTTL: time.Hour, EncryptionKeys: map[uint8][]byte{1: make([]byte, 32), 3: make([]byte, 32)}})
	if err != nil {
		t.Fatal(err)
	}
	if sealed, err := s.Sealed(ctx, tenant, "held"); !sealed || err != nil {
		t.Fatalf("held key: %v, %v", sealed, err)
	}
	sealed, err := s.Sealed(ctx, tenant, "lost")
	if !sealed || !errors.Is(err, ErrMissingKey) {
		t.Fatalf("lost key: %v, %v; want ErrMissingKey", sealed, err)
	}
	if want := `queue "lost" is sealed under key id 9 and ` + ErrMissingKey.Error() + ` (it holds key ids 3, 1)`; !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("refusal %q, want it to start %q", err, want)
	}
}
