package cursors

import (
	"sync"
	"time"

	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/segment"
)

// hotCommit is a segment this bridge just committed to a partition of a
// live consumer's queue, or (seg nil) an announcement that another bridge
// committed to the partition named.
type hotCommit struct {
	pid       int64
	partition string
	base      int64
	count     int
	at        time.Time
	seg       *sharedSeg
	// pushed: an announcement (seg nil) of a push this bridge answered,
	// which the commit hook may have handed over already.
	pushed bool
}

// sharedSeg decodes a committed segment once for every consumer of its
// queue, on the first consumer goroutine that needs it (never on the
// fusion's flush goroutine).
type sharedSeg struct {
	blob   []byte
	once   sync.Once
	frames []segment.Frame
	err    error
}

func (s *sharedSeg) decode() ([]segment.Frame, error) {
	s.once.Do(func() { s.frames, s.err = segment.UnpackAll(s.blob) })
	return s.frames, s.err
}

// Committed is the fusion's commit hook (the same shape as the hot tail's):
// the new frames of a live consumer's partitions go to its memory, and its
// parked requests get them without reading PostgreSQL. Cheap: a map look-up
// per segment, the decoding is left to the consumers' goroutines.
func (e *JSEngine) Committed(writes []segment.Write, results []segment.Result) {
	if len(writes) != len(results) {
		return
	}
	now := e.cfg.Clock.Now()
	for i := range writes {
		w, r := &writes[i], &results[i]
		if r.Status != segment.Queued || r.PartitionID <= 0 || w.Count <= 0 {
			continue
		}
		cs := e.queueConsumers(w.Tenant, w.Queue)
		if len(cs) == 0 {
			continue
		}
		e.own.mark(partKey{w.Tenant, w.Queue, w.Partition}, cs, now)
		hc := hotCommit{pid: r.PartitionID, partition: w.Partition, base: r.BaseOffset, count: int(w.Count), at: r.CreatedAt, seg: &sharedSeg{blob: w.Blob}}
		for _, c := range cs {
			c.handOver(hc)
		}
	}
}

// Heard wakes the live consumers of a queue when a commit to one of its
// partitions was announced (readside's announcements, a peer's or this
// bridge's own; the shape of readside's Listener): their next fill reads
// the partition. An announcement of a push this bridge answered (pushed)
// is passed over when this bridge's own commits of the partition reached
// the consumer through Committed within heardQuiet: it is most likely of
// those, and a commit of another bridge in between shows as a gap in the
// offsets, which is read. A peer's announcement, and this bridge's of a
// transaction's commit (which Committed never sees), always read. The
// engine passes over such an announcement itself when it handed over a
// commit of the partition within heardQuiet (ownCommits): at a message a
// publish, there is an announcement a message, and each would otherwise
// be a hand-over and a pass of every consumer of the queue.
func (e *JSEngine) Heard(tenant tenancy.TenantID, queue, partition string, pushed bool) {
	cs := e.queueConsumers(tenant, queue)
	if pushed && e.own.recent(partKey{tenant, queue, partition}, cs, e.cfg.Clock.Now()) {
		return
	}
	for _, c := range cs {
		c.handOver(hotCommit{partition: partition, pushed: pushed})
	}
}

// Listening reports whether announcements would change anything here:
// some consumer is live.
func (e *JSEngine) Listening() bool { return e.nlive.Load() > 0 }

// heardQuiet: an announcement of a partition this bridge committed to
// more recently than this is taken as one of its own commits.
const heardQuiet = time.Second

// ownCommits is when Committed last handed over a commit of each
// partition of a consumed queue, and to which consumers, for Heard.
// Entries older than heardQuiet are swept at most once per heardQuiet,
// so it holds about the partitions committed to in the last two.
type ownCommits struct {
	mu    sync.Mutex // Committed (the fusion's flush goroutine) marks, Heard (any announcer's goroutine) looks
	at    map[partKey]ownMark
	swept time.Time
}

// partKey names a partition across queues and tenants.
type partKey struct {
	tenant           tenancy.TenantID
	queue, partition string
}

// ownMark is a hand-over: when, and the queue's consumers then (the
// first of queueConsumers' array and its length, which name the list:
// it is never changed where a reader can see it).
type ownMark struct {
	at    time.Time
	first **consumer
	n     int
}

func (o *ownCommits) mark(k partKey, cs []*consumer, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.at == nil {
		o.at = map[partKey]ownMark{}
	}
	if now.Sub(o.swept) >= heardQuiet {
		o.swept = now
		for k, m := range o.at {
			if now.Sub(m.at) >= heardQuiet {
				delete(o.at, k)
			}
		}
	}
	o.at[k] = ownMark{at: now, first: &cs[0], n: len(cs)}
}

// recent reports whether k's last commit was handed over within
// heardQuiet to exactly the consumers cs: one that came live since did
// not get it, and hears the announcement.
func (o *ownCommits) recent(k partKey, cs []*consumer, now time.Time) bool {
	if len(cs) == 0 {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	m, ok := o.at[k]
	return ok && now.Sub(m.at) < heardQuiet && m.first == &cs[0] && m.n == len(cs)
}

// queueConsumers answers the live consumers of a queue. The slice is
// shared, not copied: byQueue's lists are never changed where a reader
// can see them (a consumer is appended past every reader's length, and
// a removal makes a new array), so the caller may range over it after
// mu is released.
func (e *JSEngine) queueConsumers(tenant tenancy.TenantID, queue string) []*consumer {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.byQueue[queueKey{tenant, queue}]
}

// maxHot bounds the commits waiting for a consumer's goroutine; past it
// the oldest are dropped, and marked to be read from PostgreSQL.
const maxHot = 4096

func (c *consumer) handOver(hc hotCommit) {
	c.hotMu.Lock()
	if len(c.hot) >= maxHot {
		c.hot[0] = hotCommit{pid: c.hot[0].pid, partition: c.hot[0].partition}
		c.hot = append(c.hot[:0], c.hot[1:]...)
	}
	c.hot = append(c.hot, hc)
	c.hotMu.Unlock()
	c.wake()
}

// takeHot moves the handed-over commits into the consumer's state. A
// partition it does not know (made after the consumer was loaded) asks
// for a refresh of its partitions.
func (c *consumer) takeHot() {
	c.hotMu.Lock()
	hot := c.hot
	c.hot = nil
	c.hotMu.Unlock()
	if len(hot) == 0 {
		return
	}
	// Decode outside mu: deliveries of other requests go on meanwhile.
	frames := make([][]segment.Frame, len(hot))
	for i := range hot {
		if hot[i].seg != nil {
			f, err := hot[i].seg.decode()
			if err != nil {
				c.e.cfg.Logger.Warn().Err(err).Int64("partition_id", hot[i].pid).Msg("committed segment not decodable; read from PostgreSQL")
			}
			frames[i] = f
		}
	}
	now := c.e.cfg.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, hc := range hot {
		p := c.parts[hc.pid]
		if hc.seg == nil || p == nil {
			if p = c.partByName(hc.partition); p != nil {
				if hc.seg != nil || !hc.pushed || now.Sub(p.hotAt) >= heardQuiet {
					p.maybeMore = true
				}
			} else {
				c.hotMu.Lock()
				c.refresh = true
				c.hotMu.Unlock()
			}
			continue
		}
		p.last = max(p.last, hc.base+int64(hc.count)-1)
		p.hotAt = now
		if len(frames[i]) != hc.count {
			continue
		}
		for k := range frames[i] {
			o := hc.base + int64(k)
			if o <= p.next {
				continue
			}
			sm := StoredMsg{Offset: o, Frame: frames[i][k], CreatedAt: hc.at}
			m, err := c.toMsg(p, &sm)
			if err != nil {
				continue // the read from PostgreSQL deals with it
			}
			c.keep(p, m, false)
		}
	}
}

// partByName is the partition the consumer knows by name: the newest id
// when a name was made again. Under mu.
func (c *consumer) partByName(name string) *pstate { return c.byName[name] }

// frameSubject is the subject and header block a frame keeps ("" and nil
// for a frame written before they were stored, or a Queen push: the
// subject is then rebuilt from the stream's filter and the partition).
func frameSubject(f *segment.Frame) (string, []byte) { return f.Subject, f.Header }

// Dropped forgets the live consumers of a deleted queue (its definitions
// went with it): their parked requests hear 409 Consumer Deleted.
func (e *JSEngine) Dropped(tenant tenancy.TenantID, queue string) {
	for _, c := range e.queueConsumers(tenant, queue) {
		c.mu.Lock()
		c.deleted = true
		c.mu.Unlock()
		e.forget(c)
		c.stop(descDeleted, 409, false)
	}
}
