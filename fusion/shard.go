package fusion

import (
	"sync"
	"time"

	"github.com/queenbridge/queenbridge/segment"
)

// shard owns a disjoint set of partitions. Every field below is touched only
// by the shard's goroutine (run), except the channels, which are how the rest
// of the world reaches it.
type shard struct {
	f      *Fusion
	id     int
	in     chan *request    // submissions (bounded: Config.ShardQueue)
	done   chan *completion // flush completions (cap = InFlightMax + 1: at most one per bundle in flight)
	kick   chan struct{}    // a bundle permit was freed somewhere (cap 1)
	fills  chan *fillResult // gap reads; never blocks (cap = maxFills)
	forget chan queueRef    // deleted queues (Forget)

	parts       map[partKey]*partState
	ready       []*partState // pending frames, no flush in flight, FIFO
	outstanding int          // segments taken (in a bundle or the outbox) and not completed
	draining    bool
	held        bool // segments wait for a permit (here or in the outbox)
	dedup       map[[segment.HashSize]byte]int32
	lastSwp     time.Time

	fillQueue []*partState // partitions waiting to have a gap read
	filling   int          // gap reads in flight
}

// maxFills bounds one shard's gap reads at once: after a restart every
// partition has a gap, and they should not all query at the same moment.
const maxFills = 2

// fillResult is a gap read: the hashes stored in (lo, hi] of part.
type fillResult struct {
	part   *partState
	hi     int64
	hashes []segment.HashAt
	err    error
	epoch  uint64 // part.epoch when the read began
}

// completion is a finished flush, sent to each shard with segments in it
// after the Sink call returned (so after the commit).
type completion struct {
	b       *bundle
	segs    []int // indices into b.segs of the segments this shard owns
	results []segment.Result
	err     error
	// reopened is done once the shard has applied the completion and
	// dispatched or set out (to the outbox) what its partitions hold.
	reopened *sync.WaitGroup
}

func newShard(f *Fusion, id int) *shard {
	return &shard{
		f: f, id: id,
		in:     make(chan *request, f.cfg.ShardQueue),
		done:   make(chan *completion, f.cfg.InFlightMax+1),
		kick:   make(chan struct{}, 1),
		fills:  make(chan *fillResult, maxFills),
		forget: make(chan queueRef, 16),
		parts:  map[partKey]*partState{},
		dedup:  map[[segment.HashSize]byte]int32{},
	}
}

func (s *shard) run() {
	defer s.f.shardWG.Done()
	hold := time.NewTicker(s.f.cfg.HoldTick)
	defer hold.Stop()
	stopping, abort := s.f.stopping, s.f.abort
	for {
		var reopened *sync.WaitGroup
		var tick <-chan time.Time
		if s.held || time.Since(s.lastSwp) > sweepEvery {
			tick = hold.C // the backstop runs only while something is held
		}
		select {
		case r := <-s.in:
			s.accept(r)
			for i := 0; i < 256; i++ { // take what is already queued, without waiting
				select {
				case r := <-s.in:
					s.accept(r)
					continue
				default:
				}
				break
			}
		case c := <-s.done:
			s.complete(c)
			reopened = c.reopened
		case r := <-s.fills:
			s.filled(r)
		case k := <-s.forget:
			s.forgetQueue(k)
		case <-s.kick:
		case <-tick:
			s.sweep()
		case <-stopping:
			stopping, s.draining = nil, true
		case <-abort:
			abort, s.draining = nil, true
			s.failPending()
		}
		if abort == nil {
			s.failPending() // aborted: nothing new is dispatched
		} else {
			s.dispatch()
		}
		if reopened != nil {
			reopened.Done()
		}
		if s.draining && s.outstanding == 0 && len(s.in) == 0 && len(s.ready) == 0 {
			return
		}
	}
}

func (s *shard) accept(r *request) {
	k := partKey{r.sub.Tenant, r.sub.Queue, r.sub.Partition}
	p := s.parts[k]
	if p == nil {
		p = newPartState(k, s.f.recentBudget)
		s.parts[k] = p
	}
	for i := range r.sub.Frames {
		p.pending = append(p.pending, item{req: r, idx: int32(i)})
	}
	p.lastUsed = time.Now()
	s.markReady(p)
}

func (s *shard) markReady(p *partState) {
	if len(p.pending) > 0 && !p.inFlight && !p.queued {
		p.queued = true
		s.ready = append(s.ready, p)
	}
}

// dispatch fires bundles while partitions are ready here or segments wait in
// the outbox, and the limiter grants a permit at once. A bundle takes what
// shards left in the outbox first (oldest first), then this shard's ready
// partitions, up to BundleMax segments and BundleMaxBytes (take.go).
// Without a permit the ready partitions go to the outbox, where the next
// bundle to fire (on any shard) takes them: that is where bundles grow under
// load, across shards.
func (s *shard) dispatch() {
	s.held = false
	for len(s.ready) > 0 || s.f.outbox.len() > 0 {
		now := time.Now()
		if !s.f.limit.tryAcquire(s.kick) {
			if len(s.ready) > 0 {
				s.f.outbox.put(s.takeAll(now))
			}
			s.held = true // the backstop tick retries if the kick is lost
			return
		}
		// The outbox first: its segments were taken earlier, and a shard
		// that always has BundleMax ready partitions must not keep other
		// shards' segments waiting.
		b := &bundle{}
		s.f.outbox.take(b, s.f.cfg.BundleMax, s.f.cfg.BundleMaxBytes)
		s.fill(b, now)
		if len(b.segs) == 0 {
			// Every ready frame was answered locally (an empty bundle
			// takes at least one frame to write when there is one).
			s.f.limit.release(0, false, false)
			return
		}
		s.f.flushWG.Add(1)
		go s.f.flush(b)
	}
}

// complete reopens this shard's partitions of a finished bundle and updates
// what they know; duplicate segments put their unwritten frames back at the
// head.
func (s *shard) complete(c *completion) {
	s.outstanding -= len(c.segs)
	now := time.Now()
	for _, i := range c.segs {
		seg := c.b.segs[i]
		p := seg.part
		p.inFlight = false
		p.lastUsed = now
		if c.err != nil || c.results[i].Status == segment.Failed {
			// The id may be what failed the bundle (a partition recreated
			// under another id): the next flush resolves it by name again.
			p.pid, p.qid = 0, 0
		} else {
			r := c.results[i]
			// stale: the partition's queue was deleted while this flush was
			// in flight (forgetQueue). Its verdicts stand; what it would
			// teach (an id, hashes, offsets) may be of the deleted queue.
			stale := seg.epoch != p.epoch
			if !stale {
				p.pid, p.qid = r.PartitionID, r.QueueID
			}
			switch r.Status {
			case segment.Queued:
				if !stale {
					p.committed(r.BaseOffset, seg.leaders, r.WindowSeconds, now)
					s.maybeFill(p)
				}
			case segment.Duplicate:
				if !stale {
					p.setWindow(r.WindowSeconds, now)
				}
				if again := seg.unwritten(r.Dups); len(again) > 0 {
					p.pending = append(again, p.pending...)
					s.f.stats.requeued.Add(uint64(len(again)))
				}
			}
		}
		s.markReady(p)
	}
}

// maybeFill queues a read of the foreign offsets a commit revealed, when the
// sink can do it.
func (s *shard) maybeFill(p *partState) {
	if s.f.hashes == nil || p.gapAt.IsZero() || p.filling || p.window <= 0 || p.pid == 0 || s.draining {
		return
	}
	p.filling = true
	s.fillQueue = append(s.fillQueue, p)
	s.startFills()
}

func (s *shard) startFills() {
	for s.filling < maxFills && len(s.fillQueue) > 0 {
		p := s.fillQueue[0]
		s.fillQueue[0] = nil
		s.fillQueue = s.fillQueue[1:]
		if p.gapHi <= p.verified {
			p.filling = false
			continue
		}
		s.filling++
		s.f.flushWG.Add(1)
		go s.f.fill(s, p, p.epoch, p.pid, p.verified, p.gapHi, p.window)
	}
}

// filled applies a gap read; another gap opened meanwhile gets its own.
// The read is counted here, once applied: a frame submitted after Stats
// shows it meets the hashes it read.
func (s *shard) filled(r *fillResult) {
	defer s.f.stats.fills.Add(1)
	s.filling--
	p := r.part
	if r.epoch != p.epoch { // a read of a deleted queue's partition
		s.startFills()
		return
	}
	p.filling = false
	if r.err != nil {
		s.f.logFillError(r.err, p.pid)
	} else if p.filled(r.hi, r.hashes, time.Now()) {
		s.maybeFill(p)
	}
	s.startFills()
}

// failPending answers every frame not yet dispatched with ErrAborted: those
// still pending here, and those of this shard's segments waiting in the
// outbox.
func (s *shard) failPending() {
	for _, seg := range s.f.outbox.takeOwn(s) {
		s.outstanding--
		seg.part.inFlight = false
		v := Verdict{Status: Error, Err: ErrAborted}
		seg.fail(v)
		for _, d := range seg.localDups {
			d.it.req.settle(d.it.idx, v)
		}
	}
	for _, p := range s.ready {
		p.queued = false
		for _, it := range p.pending {
			it.req.settle(it.idx, Verdict{Status: Error, Err: ErrAborted})
		}
		clear(p.pending)
		p.pending = p.pending[:0]
	}
	s.ready = s.ready[:0]
	for {
		select {
		case r := <-s.in:
			for i := range r.sub.Frames {
				r.settle(int32(i), Verdict{Status: Error, Err: ErrAborted})
			}
		default:
			return
		}
	}
}

const (
	sweepEvery = 10 * time.Second
	// idleForget: a partition idle this long is forgotten; if it comes back,
	// its first flushes probe the whole window, as after a restart.
	idleForget = 10 * time.Minute
)

// sweep forgets what idle partitions no longer need: recent hashes older
// than the window, and whole partitions idle for idleForget.
func (s *shard) sweep() {
	now := time.Now()
	if now.Sub(s.lastSwp) < sweepEvery {
		return
	}
	s.lastSwp = now
	for k, p := range s.parts {
		if p.inFlight || p.queued || len(p.pending) > 0 {
			continue
		}
		idle := now.Sub(p.lastUsed)
		switch {
		case idle > idleForget:
			p.recent.Reset() // gives its bytes back to the budget
			delete(s.parts, k)
		case p.window >= 0:
			p.recent.Expire(now, p.windowDur())
			p.recent.Shrink()
		}
	}
}
