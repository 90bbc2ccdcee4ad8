package fusion

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/queenbridge/queenbridge/fusion/recent"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/rs/zerolog"
	"github.com/zeebo/xxh3"
)

// Fusion is the write path's commit layer. Create it with New, then Start.
type Fusion struct {
	cfg    Config
	shards []*shard
	limit  *inflightLimit // bundles in flight, shared by every shard (inflight.go)
	// extraFields adds fields to the summary line (SetSummaryFields); an
	// atomic pointer because the bridge sets it after fusion has started.
	extraFields atomic.Pointer[func(*zerolog.Event)]
	// committed hears of every committed bundle (SetOnCommitted); atomic for
	// the same reason.
	committed atomic.Pointer[func([]segment.Write, []segment.Result)]
	// yield is SetYield's factor in thousandths; read by every flush.
	yield atomic.Int64
	// period numbers the summary periods (from 1); periodParts counts the
	// partitions written in the current one (shards add, the summary
	// loop takes).
	period      atomic.Uint64
	periodParts atomic.Int64
	stats       counters
	hashes      HashSource // the Sink's, when it has one
	meter       FlushMeter // the Sink's, when it has one

	// gate orders Submit against Stop: Submit holds it shared while it
	// checks `stopped` and enqueues; Stop takes it exclusively to set
	// `stopped`. After Stop's critical section no submission can enter a
	// shard queue, so a draining shard that finds its queue empty is done.
	gate    sync.RWMutex
	started bool
	stopped bool

	pendingBytes atomic.Int64
	recentBudget *recent.Budget // shared by every partition's recent-hash set
	outbox       outbox         // segments waiting for a permit, from every shard

	ctx      context.Context // Sink calls; cancelled when Stop gives up waiting
	cancel   context.CancelFunc
	stopping chan struct{} // closed: drain, then exit
	abort    chan struct{} // closed: fail what is not dispatched yet
	shardWG  sync.WaitGroup
	flushWG  sync.WaitGroup // flush and id-resolution goroutines
	bgWG     sync.WaitGroup // summary logger
	stopOnce sync.Once
	stopErr  error
}

// New validates cfg and builds a stopped Fusion.
func New(cfg Config) (*Fusion, error) {
	if err := cfg.applyDefaults(); err != nil {
		return nil, err
	}
	f := &Fusion{
		cfg:      cfg,
		limit:    newInflightLimit(cfg.InFlightMin, cfg.InFlightMax, cfg.InFlightInitial),
		stopping: make(chan struct{}),
		abort:    make(chan struct{}),
	}
	f.period.Store(1) // a new partState (period 0) counts in the first period
	f.recentBudget = recent.NewBudget(cfg.RecentHashBytes)
	f.hashes, _ = cfg.Sink.(HashSource)
	f.meter, _ = cfg.Sink.(FlushMeter)
	f.ctx, f.cancel = context.WithCancel(context.Background())
	for i := 0; i < cfg.Shards; i++ {
		f.shards = append(f.shards, newShard(f, i))
	}
	return f, nil
}

// Start launches the shard goroutines and the summary logger. The context is
// not retained: Stop ends them.
func (f *Fusion) Start(context.Context) error {
	f.gate.Lock()
	defer f.gate.Unlock()
	if f.started || f.stopped {
		return errors.New("fusion: Start called twice or after Stop")
	}
	f.started = true
	for _, s := range f.shards {
		f.shardWG.Add(1)
		go s.run()
	}
	f.bgWG.Add(1)
	go f.summaryLoop()
	if f.meter != nil {
		f.bgWG.Add(1)
		go f.meterLoop()
	}
	return nil
}

// Submit hands one partition's frames to fusion. It returns once they are
// queued in their shard (blocking while the shard queue is full, until ctx
// ends); the verdicts arrive later through s.Done. On error Done is not called.
func (f *Fusion) Submit(ctx context.Context, s Submission) error {
	if s.Done == nil {
		return errors.New("fusion: Submission.Done is required")
	}
	if s.Queue == "" || s.Partition == "" {
		return fmt.Errorf("fusion: submission needs a queue and a partition (got %q, %q)", s.Queue, s.Partition)
	}
	if s.Minted != nil && len(s.Minted) != len(s.Frames) {
		return fmt.Errorf("fusion: Minted has %d entries for %d frames", len(s.Minted), len(s.Frames))
	}
	if s.Marks != nil && len(s.Marks) != len(s.Frames) {
		return fmt.Errorf("fusion: Marks has %d entries for %d frames", len(s.Marks), len(s.Frames))
	}
	if len(s.Frames) == 0 {
		s.Done(nil)
		return nil
	}
	r := &request{sub: s, f: f, hashes: make([][segment.HashSize]byte, len(s.Frames)), verdicts: make([]Verdict, len(s.Frames))}
	for i := range s.Frames {
		r.hashes[i] = segment.Hash(s.Frames[i].TransactionID)
		r.bytes += int64(len(s.Frames[i].Payload) + len(s.Frames[i].Header))
	}
	r.remaining.Store(int32(len(s.Frames)))
	if f.pendingBytes.Add(r.bytes) > f.cfg.MaxPendingBytes && r.bytes > 0 {
		f.pendingBytes.Add(-r.bytes)
		return ErrOverloaded
	}
	sh := f.shards[f.shardOf(s.Tenant, s.Queue, s.Partition)]
	f.gate.RLock()
	defer f.gate.RUnlock()
	if !f.started || f.stopped {
		f.pendingBytes.Add(-r.bytes)
		return ErrStopped
	}
	select {
	case sh.in <- r:
		return nil
	case <-ctx.Done():
		f.pendingBytes.Add(-r.bytes)
		return ctx.Err()
	}
}

// SetShare divides the database budget (InFlightMax bundles in flight) among
// n writers of the same database: this fusion may keep at most
// ceil(InFlightMax / n), and at least InFlightMin, in flight, so that n bridges
// together use about what one would.
func (f *Fusion) SetShare(n int) {
	if n < 1 {
		n = 1
	}
	f.limit.setMax((f.cfg.InFlightMax + n - 1) / n)
}

// SetYield makes each bundle's permit stay taken for y times the bundle's
// commit time after it commits (0: released at once): y is how busy the
// other writers of the database keep it, in bundles in flight on average.
func (f *Fusion) SetYield(y float64) { f.yield.Store(int64(max(0, min(y, 16)) * 1000)) }

func (f *Fusion) shardOf(tenant tenancy.TenantID, queue, partition string) int {
	h := xxh3.HashStringSeed(partition, xxh3.HashStringSeed(queue, xxh3.Hash(tenant[:])))
	return int(h % uint64(len(f.shards)))
}

// Stop closes intake, lets every accumulated and in-flight segment commit or
// fail, waits until every verdict is delivered, and returns. When ctx ends
// first, frames not yet dispatched are answered ErrAborted and in-flight Sink
// calls are cancelled (their frames answered Error); Stop still waits for
// that, then returns ctx's error. Idempotent.
func (f *Fusion) Stop(ctx context.Context) error {
	f.stopOnce.Do(func() {
		f.gate.Lock()
		wasStarted := f.started
		f.stopped = true
		f.gate.Unlock()
		close(f.stopping)
		if wasStarted {
			drained := make(chan struct{})
			go func() { f.shardWG.Wait(); close(drained) }()
			select {
			case <-drained:
			case <-ctx.Done():
				f.stopErr = fmt.Errorf("fusion: stop: %w", ctx.Err())
				close(f.abort)
				f.cancel()
				<-drained
			}
		}
		f.flushWG.Wait()
		f.cancel()
		f.bgWG.Wait()
	})
	return f.stopErr
}
