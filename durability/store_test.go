package durability

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/queenbridge/queenbridge/storage"
)

// fakeStore is the switches' row and the work retention and the purge find,
// in memory. Request goroutines and the keeper's loops may call it, so a
// mutex guards it.
type fakeStore struct {
	mu       sync.Mutex
	down     error // answered by Ping and the switches' writes while set
	switches storage.Switches
	purges   []storage.PurgeResult // answered in turn; then nothing is left
	purged   int                   // purge steps run
}

func (f *fakeStore) Ping(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.down
}

func (f *fakeStore) SetMaintenance(_ context.Context, on bool) error {
	return f.setSwitch(func(sw *storage.Switches) { sw.Maintenance = on })
}

func (f *fakeStore) SetPopMaintenance(_ context.Context, on bool) error {
	return f.setSwitch(func(sw *storage.Switches) { sw.PopMaintenance = on })
}

// setSwitch stores a switch unless the store is down.
func (f *fakeStore) setSwitch(set func(*storage.Switches)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != nil {
		return f.down
	}
	set(&f.switches)
	return nil
}

func (f *fakeStore) ReadSwitches(context.Context) (storage.Switches, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.switches, f.down
}

func (f *fakeStore) RetentionStep(context.Context, int, int) (storage.RetentionResult, error) {
	return storage.RetentionResult{}, nil
}

func (f *fakeStore) PurgeStep(context.Context, int, int) (storage.PurgeResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.purged++
	if len(f.purges) == 0 {
		return storage.PurgeResult{}, nil
	}
	r := f.purges[0]
	f.purges = f.purges[1:]
	if r.Partitions < 0 {
		return storage.PurgeResult{}, errors.New("purge step timed out")
	}
	return r, nil
}

func (f *fakeStore) setDown(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = err
}

// noSink refuses every write: the keeper under test replays nothing.
type noSink struct{}

func (noSink) PushBundle(context.Context, []segment.Write) ([]segment.Result, error) {
	return nil, errors.New("no writes here")
}

func (noSink) SegmentAt(context.Context, int64, int64) (segment.Stored, error) {
	return segment.Stored{}, errors.New("no segments here")
}

// newFakeKeeper is a Keeper on store, not started: its calls run on the
// test's goroutine.
func newFakeKeeper(t *testing.T, store *fakeStore) *Keeper {
	t.Helper()
	f, err := fusion.New(fusion.Config{Sink: noSink{}})
	if err != nil {
		t.Fatal(err)
	}
	k, err := New(Config{DB: store, Fusion: f, RetentionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// A switch set while the store cannot take it answers 503 and is not
// applied here; once stored it is applied and answered; the answers and
// the health route say whether PostgreSQL answers.
func TestSwitchesOnStore(t *testing.T) {
	t.Parallel()
	ctx, on := context.Background(), true
	store := &fakeStore{}
	k := newFakeKeeper(t, store)

	store.setDown(errors.New("connection refused"))
	status, body := k.ServeMaintenance(ctx, &on)
	if status != jsonapi.StatusServiceUnavailable || !strings.Contains(string(body), "connection refused") || k.Maintenance() {
		t.Fatalf("set while down: %d %s, applied %v", status, body, k.Maintenance())
	}
	if status, body := k.ServeHealth(ctx); status != 503 || !strings.Contains(string(body), `"postgres":"down"`) {
		t.Fatalf("health while down: %d %s", status, body)
	}

	store.setDown(nil)
	status, body = k.ServeMaintenance(ctx, &on)
	if status != jsonapi.StatusOK || !k.Maintenance() || !store.switches.Maintenance ||
		!strings.Contains(string(body), `"dbHealthy":true`) || !strings.Contains(string(body), `"maintenanceMode":true`) {
		t.Fatalf("set: %d %s, applied %v, stored %+v", status, body, k.Maintenance(), store.switches)
	}
	if status, body := k.ServePopMaintenance(ctx, &on); status != jsonapi.StatusOK || !k.PopMaintenance() ||
		string(body) != string(jsonapi.AppendPopMaintenance(nil, true)) {
		t.Fatalf("pop maintenance: %d %s", status, body)
	}
	if status, body := k.ServeHealth(ctx); status != 200 || !strings.Contains(string(body), `"postgres":"up","nats":"disabled"`) {
		t.Fatalf("health: %d %s", status, body)
	}
}

// Purge runs steps until one finds no deleted partition, and stops at the
// first that fails, with its error.
func TestPurgeOnStore(t *testing.T) {
	t.Parallel()
	store := &fakeStore{purges: []storage.PurgeResult{{Partitions: 16, Rows: 500}, {Partitions: 2, Rows: 7, Done: 2}, {}, {Partitions: 9}}}
	k := newFakeKeeper(t, store)
	if err := k.Purge(context.Background()); err != nil || store.purged != 3 {
		t.Fatalf("purge: %v after %d steps, want 3 steps", err, store.purged)
	}

	store = &fakeStore{purges: []storage.PurgeResult{{Partitions: 16}, {Partitions: -1}, {Partitions: 16}}}
	k = newFakeKeeper(t, store)
	if err := k.Purge(context.Background()); err == nil || err.Error() != "purge step timed out" || store.purged != 2 {
		t.Fatalf("failing purge: %v after %d steps, want the error after 2", err, store.purged)
	}
}
