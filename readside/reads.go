package readside

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/internal/peers"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/storage"
)

// Config wires reads to the database and the peers.
type Config struct {
	// DB holds the log (*pgwire.DB). Required.
	DB Store
	// Peers carries MESSAGE_AVAILABLE both ways; no NATS: none. Default none.
	Peers peers.Link
	// DisableHotlist makes announcements wake parked reads directly instead
	// of through the 5 ms hot-list tick (QUEEN_HOTLIST=0). Default false.
	DisableHotlist bool
	// Listener hears every announcement this bridge makes or takes from a
	// peer (*cursors.Marks steers any-partition pops with them). Default
	// none.
	Listener Listener
	// Tombstones, when set, hears the tombstones peers served
	// (<prefix>.v1.message.deleted; tombstones.go): cursors.JSEngine drops
	// what this bridge holds of those messages in memory. Default none.
	Tombstones Tombstones
}

// Listener hears of announcements: Heard for each partition announced,
// here or by a peer, with pushed true when this bridge announced a push it
// answered (AnnouncePushed: its own fusion's commit, which the commit hook
// may have handed over already, or a forwarded push's owner's); false for
// a peer's announcement and this bridge's others (a transaction's commit,
// a lease given back). Listening reports whether it keeps anything an
// announcement would change, so that with nothing parked here and nothing
// listening a peer's announcement is not decoded. Heard runs on the
// announcer's goroutine and must not block.
type Listener interface {
	Heard(tenant tenancy.TenantID, queue, partition string, pushed bool)
	Listening() bool
}

type noListener struct{}

func (noListener) Heard(tenancy.TenantID, string, string, bool) {}
func (noListener) Listening() bool                              { return false }

// Reads owns fetches, parked reads, the hot-list and announcements.
type Reads struct {
	cfg     Config
	parked  *parked
	hot     *keySet // partitions whose parked reads wake on the next tick
	toPeers *keySet // partitions to announce to peers
	sub     *nats.Subscription
	delSub  *nats.Subscription // peers' tombstones, with Tombstones
	quit    chan struct{}      // closed by Stop: loops end, parked reads answer empty
	leave   chan struct{}      // closed by Unpark: parked reads and pops answer now
	unpark  sync.Once
	bg      sync.WaitGroup
	stop    sync.Once

	announced         atomic.Uint64
	peerAnnouncements atomic.Uint64
	peerTombstones    atomic.Uint64 // peers' tombstones told to Tombstones
	queries           atomic.Uint64 // reads of the database by Fetch
}

// New validates cfg.
func New(cfg Config) (*Reads, error) {
	if cfg.DB == nil {
		return nil, errors.New("readside: Config.DB is required")
	}
	if cfg.Listener == nil {
		cfg.Listener = noListener{}
	}
	return &Reads{cfg: cfg, parked: newParked(), hot: newKeySet(), toPeers: newKeySet(), quit: make(chan struct{}), leave: make(chan struct{})}, nil
}

// Start runs the hot-list loop, and with peers the publisher and the
// subscriptions to their announcements and (with Tombstones) tombstones.
func (r *Reads) Start(context.Context) error {
	if !r.cfg.DisableHotlist {
		r.bg.Add(1)
		go r.hotlistLoop()
	}
	if !r.cfg.Peers.Enabled() {
		return nil
	}
	sub, err := r.cfg.Peers.Subscribe(peers.Available, true, r.onAvailable)
	if err != nil {
		return err
	}
	r.sub = sub
	if r.cfg.Tombstones != nil {
		if r.delSub, err = r.cfg.Peers.Subscribe(peers.MessageDeleted, true, r.onDeleted); err != nil {
			peers.Unsubscribe(r.sub)
			return err
		}
	}
	r.bg.Add(1)
	go r.publishLoop()
	return nil
}

// Unpark makes every parked read and pop answer with what it has (nothing)
// at once, and every later one answer without parking: the bridge is
// stopping, and its clients should ask another bridge rather than wait out
// their timeouts here. Idempotent.
func (r *Reads) Unpark() { r.unpark.Do(func() { close(r.leave) }) }

// Stop ends the loops and the subscription and answers parked reads with
// what they have (nothing). Idempotent.
func (r *Reads) Stop(context.Context) error {
	r.stop.Do(func() {
		close(r.quit)
		peers.Unsubscribe(r.sub)
		peers.Unsubscribe(r.delSub)
		r.bg.Wait()
	})
	return nil
}

// FetchRequest is a validated read.
type FetchRequest struct {
	Queue, Partition string
	From             int64 // first offset
	Limit            int   // at most this many messages
	MaxBytes         int64 // and at most this many payload bytes, but at least one message
	Wait             time.Duration
}

// Fetch reads messages from an offset. With a wait and nothing there yet it
// parks, costing no query, until a push to the partition is announced (here
// or by a peer), the wait ends or Stop, then reads again. Errors are the
// database's, or the caller's context ending.
//
// A wake that finds nothing (announcements for a partition whose new
// messages lie below the read's offset, or announcements nobody's push
// caused) makes the next wake wait a little: 5 ms, doubling per empty wake
// up to 250 ms, wakes meanwhile coalescing into one. So a parked read
// queries at most a few times a second however many announcements arrive,
// whoever sends them, while a wake that finds messages answers at once.
func (r *Reads) Fetch(ctx context.Context, tenant tenancy.TenantID, req FetchRequest) ([]storage.Message, error) {
	k := Key{Tenant: tenant, Queue: req.Queue, Partition: req.Partition}
	return lookParked(r, ctx, k, req.Wait, "read", func() ([]storage.Message, bool, error) {
		msgs, err := r.cfg.DB.ReadMessages(ctx, tenant, req.Queue, req.Partition, req.From, req.Limit, req.MaxBytes)
		// Counted once made, so that a count seen together with the read
		// parked means that read has looked and found nothing.
		r.queries.Add(1)
		if err != nil {
			return nil, false, err
		}
		return msgs, len(msgs) > 0, nil
	})
}

// Dropped is told that a queue was deleted (here or by a peer): reads and
// pops parked on it answer now, empty. The caller also drops what the
// consumer state keeps of it (cursors.Marks.Drop, cursors.Tail.Drop).
func (r *Reads) Dropped(tenant tenancy.TenantID, queue string) {
	r.parked.drop(tenant, queue)
}

// leaving reports whether Unpark was called.
func (r *Reads) leaving() bool {
	select {
	case <-r.leave:
		return true
	default:
		return false
	}
}

// The pause before heeding another wake after an empty one.
const (
	minSettle = 5 * time.Millisecond
	maxSettle = 250 * time.Millisecond
)

// Stats are counters for the metrics.
type Stats struct {
	Wakes             uint64 // partition wake-ups of parked reads
	Parked            int64  // reads parked now
	Announced         uint64 // MESSAGE_AVAILABLE sent to peers
	PeerAnnouncements uint64 // MESSAGE_AVAILABLE received from peers
	PeerTombstones    uint64 // peers' tombstones told to Tombstones
	Queries           uint64 // database reads made by fetches
}

// Stats returns a snapshot.
func (r *Reads) Stats() Stats {
	return Stats{Wakes: r.parked.wakes.Load(), Parked: r.parked.n.Load(),
		Announced: r.announced.Load(), PeerAnnouncements: r.peerAnnouncements.Load(),
		PeerTombstones: r.peerTombstones.Load(), Queries: r.queries.Load()}
}
