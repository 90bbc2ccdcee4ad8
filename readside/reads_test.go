package readside

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/internal/peers"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/storage"
)

type fetchResult struct {
	msgs []storage.Message
	err  error
}

// parkFetch starts a Fetch with a wait and returns once it is parked (it
// has read the database twice: before and after parking).
func parkFetch(t *testing.T, r *Reads, req FetchRequest) <-chan fetchResult {
	t.Helper()
	before := r.Stats()
	done := make(chan fetchResult, 1)
	go func() {
		msgs, err := r.Fetch(context.Background(), [16]byte{}, req)
		done <- fetchResult{msgs, err}
	}()
	testkit.WaitFor(t, "the fetch to park", time.Minute, func() bool {
		st := r.Stats()
		return st.Queries == before.Queries+2 && st.Parked == before.Parked+1
	})
	return done
}

func fetched(t *testing.T, done <-chan fetchResult, what string) []storage.Message {
	t.Helper()
	select {
	case res := <-done:
		if res.err != nil {
			t.Fatal(res.err)
		}
		return res.msgs
	case <-time.After(time.Minute):
		t.Fatalf("%s did not answer the parked fetch", what)
		return nil
	}
}

// Fetch reads from an offset up to a limit, one query; with nothing there
// and a wait it parks until the push is announced, and answers it.
func TestFetchReadsAndParks(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	r := startReads(t, Config{DB: db})
	push(t, db, "q", "p", "a", "b", "c")
	msgs, err := r.Fetch(context.Background(), [16]byte{}, FetchRequest{Queue: "q", Partition: "p", From: 2, Limit: 1})
	if err != nil || fmt.Sprint(txids(msgs)) != "[b]" || msgs[0].Offset != 2 {
		t.Fatalf("fetch from 2, limit 1: %v %v", txids(msgs), err)
	}
	if q := r.Stats().Queries; q != 1 {
		t.Fatalf("%d queries for one fetch", q)
	}

	done := parkFetch(t, r, FetchRequest{Queue: "q", Partition: "p", From: 4, Limit: 10, MaxBytes: 1 << 20, Wait: time.Minute})
	if off := push(t, db, "q", "p", "d", "e"); off != 4 {
		t.Fatalf("pushed at %d", off)
	}
	r.Announce([]Key{{Queue: "q", Partition: "p"}})
	if got := fetched(t, done, "the announcement"); fmt.Sprint(txids(got)) != "[d e]" || got[0].Offset != 4 {
		t.Fatalf("parked fetch: %v", txids(got))
	}
}

// Announcements skip the local part with nothing parked: no wake is
// counted. With the hot-list off, each announcement of a partition with a
// parked read wakes it directly, one wake each.
func TestAnnounceWakesOnlyWithParkedReads(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	for _, hotlist := range []bool{true, false} {
		r := startReads(t, Config{DB: db, DisableHotlist: !hotlist})
		for i := 0; i < 50; i++ {
			r.Announce([]Key{{Queue: "q", Partition: "p"}})
		}
		if w := r.Stats().Wakes; w != 0 {
			t.Fatalf("hot-list %v: %d wakes with nothing parked", hotlist, w)
		}
	}
	r := startReads(t, Config{DB: db, DisableHotlist: true})
	ch := r.parked.park(Key{Queue: "q", Partition: "p"})
	defer r.parked.unpark(Key{Queue: "q", Partition: "p"}, ch)
	for i := 0; i < 50; i++ {
		r.Announce([]Key{{Queue: "q", Partition: "p"}, {Queue: "q", Partition: "p2"}})
	}
	if w := r.Stats().Wakes; w != 100 {
		t.Fatalf("%d wakes for 100 partition announcements with a read parked", w)
	}
}

// peerPair starts two bridges' read sides on one NATS connection (so that
// what one publishes reaches the other subscription in publish order) with
// the same prefix and their own origins.
func peerPair(t *testing.T, db *pgwire.DB, la, lb Listener) (a, b *Reads) {
	t.Helper()
	nc, err := nats.Connect(testenv.NATSURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	prefix := "rs" + uuid.NewString()[:8]
	a = startReads(t, Config{DB: db, Peers: peers.Link{NATS: nc, Prefix: prefix, Origin: "a"}, Listener: la})
	b = startReads(t, Config{DB: db, Peers: peers.Link{NATS: nc, Prefix: prefix, Origin: "b"}, Listener: lb})
	return a, b
}

// A push announced on one bridge wakes a read parked on another through
// MESSAGE_AVAILABLE; a bridge drops its own announcements.
func TestPeerAnnouncementWakesAParkedRead(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	a, b := peerPair(t, db, nil, nil)
	push(t, db, "q", "p", "a")
	done := parkFetch(t, b, FetchRequest{Queue: "q", Partition: "p", From: 2, Limit: 10, MaxBytes: 1 << 20, Wait: time.Minute})
	push(t, db, "q", "p", "b")
	a.Announce([]Key{{Queue: "q", Partition: "p"}})
	if got := fetched(t, done, "a peer's announcement"); fmt.Sprint(txids(got)) != "[b]" {
		t.Fatalf("parked fetch on b: %v", txids(got))
	}
	testkit.WaitFor(t, "a to count its announcement", time.Minute, func() bool { return a.Stats().Announced == 1 })
	// b's announcement follows a's on the one connection: once a has
	// counted b's, it has seen its own, and must have dropped it.
	b.Announce([]Key{{Queue: "q", Partition: "p"}})
	testkit.WaitFor(t, "a to hear b", time.Minute, func() bool { return a.Stats().PeerAnnouncements > 0 })
	if n := a.Stats().PeerAnnouncements; n != 1 {
		t.Fatalf("a took %d announcements, want b's alone", n)
	}
	if n := b.Stats().PeerAnnouncements; n != 1 {
		t.Fatalf("b took %d announcements, want a's alone", n)
	}
}

// listener records what it hears; listening is what Listening answers.
type listener struct {
	listening atomic.Bool
	// mu guards heard: announcers and the peer subscription's goroutine
	// call Heard while the test reads it.
	mu    sync.Mutex
	heard []Key
}

func (l *listener) Heard(tenant tenancy.TenantID, queue, partition string, _ bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.heard = append(l.heard, Key{Tenant: tenant, Queue: queue, Partition: partition})
}

func (l *listener) Listening() bool { return l.listening.Load() }

func (l *listener) keys() []Key {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.heard)
}

// The Listener hears every announcement made here, and a peer's once it
// listens: while it keeps nothing and nothing is parked here, a peer's
// announcement is counted and not decoded.
func TestAnnouncementsReachTheListener(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	la, lb := &listener{}, &listener{}
	a, b := peerPair(t, db, la, lb)
	tenant := tenancy.TenantID{3}
	a.Announce([]Key{{Tenant: tenant, Queue: "q", Partition: "p"}})
	if got := la.keys(); !slices.Equal(got, []Key{{Tenant: tenant, Queue: "q", Partition: "p"}}) {
		t.Fatalf("a's listener heard %v", got)
	}
	testkit.WaitFor(t, "b to count a's announcement", time.Minute, func() bool { return b.Stats().PeerAnnouncements == 1 })
	if got := lb.keys(); len(got) != 0 {
		t.Fatalf("b's listener, not listening, heard %v", got)
	}
	lb.listening.Store(true)
	a.Announce([]Key{{Tenant: tenant, Queue: "q", Partition: "p2"}})
	testkit.WaitFor(t, "b's listener to hear a's announcement", time.Minute, func() bool {
		return slices.Equal(lb.keys(), []Key{{Tenant: tenant, Queue: "q", Partition: "p2"}})
	})
	if p := b.Stats().Parked; p != 0 {
		t.Fatalf("%d parked", p)
	}
}
