package readside

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/jsonapi"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/queenbridge/queenbridge/storage"
)

// fakeStore is a partition's log in memory. The test's goroutine writes it
// while a fetch's goroutine reads it, so a mutex guards its fields.
type fakeStore struct {
	mu    sync.Mutex
	msgs  []storage.Message // in offset order
	reads []int64           // the from of every read, in order
}

func (f *fakeStore) ReadMessages(_ context.Context, _ tenancy.TenantID, _, _ string, from int64, limit int, _ int64) ([]storage.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads = append(f.reads, from)
	var out []storage.Message
	for _, m := range f.msgs {
		if m.Offset >= from && len(out) < limit {
			out = append(out, m)
		}
	}
	return out, nil
}

func (f *fakeStore) add(offset int64, txid string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = append(f.msgs, storage.Message{Offset: offset, Frame: segment.Frame{TransactionID: txid, Payload: []byte(`{"n":1}`)}})
}

func (f *fakeStore) readCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reads)
}

// plainPayloads hands payloads back as stored, except at offset bad's
// payload, which does not open.
type plainPayloads struct{ bad []byte }

func (p plainPayloads) Plain(_ tenancy.TenantID, _, _ string, _ uint8, stored []byte) ([]byte, error) {
	if p.bad != nil && string(stored) == string(p.bad) {
		return nil, errors.New("no key opens it")
	}
	return stored, nil
}

// A parked fetch costs no read until an announcement; an announcement
// that finds nothing new leaves it parked; the one after the write
// answers with the write, read from the fetch's offset.
func TestFetchParksOnStoreUntilAnnounced(t *testing.T) {
	t.Parallel()
	store := &fakeStore{}
	r := startReads(t, Config{DB: store, DisableHotlist: true})
	done := parkFetch(t, r, FetchRequest{Queue: "q", Partition: "p", From: 4, Limit: 10, MaxBytes: 1 << 20, Wait: time.Minute})
	key := []Key{{Queue: "q", Partition: "p"}}

	r.Announce(key)
	testkit.WaitFor(t, "the empty wake's read", time.Minute, func() bool { return store.readCount() == 3 })
	if st := r.Stats(); st.Parked != 1 {
		t.Fatalf("an empty wake answered the fetch: %+v", st)
	}

	store.add(3, "below-the-offset")
	store.add(4, "wanted")
	testkit.WaitFor(t, "the fetch to answer", time.Minute, func() bool {
		r.Announce(key) // the empty wake delays the next one: announce until it is heard
		select {
		case res := <-done:
			if res.err != nil || len(res.msgs) != 1 || res.msgs[0].Frame.TransactionID != "wanted" {
				t.Fatalf("fetch answered %+v, %v; want the message at offset 4", res.msgs, res.err)
			}
			return true
		default:
			return false
		}
	})
	store.mu.Lock()
	defer store.mu.Unlock()
	for _, from := range store.reads {
		if from != 4 {
			t.Fatalf("reads from %v, want every one from 4", store.reads)
		}
	}
}

// ServeFetch validates before it reads, answers next after the last
// message, and refuses a page whose payload does not open, naming its
// offset.
func TestServeFetchOnStore(t *testing.T) {
	t.Parallel()
	store := &fakeStore{}
	store.add(5, "a")
	store.add(6, "b")
	r, err := New(Config{DB: store})
	if err != nil {
		t.Fatal(err)
	}

	status, body := r.ServeFetch(context.Background(), tenancy.TenantID{}, jsonapi.FetchRequest{Queue: "q", Limit: -1}, plainPayloads{})
	if status != jsonapi.StatusBadRequest || !strings.Contains(string(body), "limit must be") || store.readCount() != 0 {
		t.Fatalf("bad limit: %d %s after %d reads", status, body, store.readCount())
	}

	status, body = r.ServeFetch(context.Background(), tenancy.TenantID{}, jsonapi.FetchRequest{Queue: "q", From: 5}, plainPayloads{})
	if status != jsonapi.StatusOK || !strings.HasSuffix(string(body), `],"next":7}`) || strings.Count(string(body), `"transactionId"`) != 2 {
		t.Fatalf("read: %d %s", status, body)
	}

	store.mu.Lock()
	store.msgs[1].Frame.Payload = []byte(`"sealed"`)
	store.mu.Unlock()
	status, body = r.ServeFetch(context.Background(), tenancy.TenantID{}, jsonapi.FetchRequest{Queue: "q", From: 5}, plainPayloads{bad: []byte(`"sealed"`)})
	if status != jsonapi.StatusInternalServerError || !strings.Contains(string(body), "message at offset 6: no key opens it") {
		t.Fatalf("payload that does not open: %d %s", status, body)
	}
}
