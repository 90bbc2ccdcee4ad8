package bridge

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
)

// Discovery: after a push is answered, every partition it wrote to is
// announced. Locally, the hot-list marks it pending and wakes the partition's
// parked reads at most once per 5 ms tick (at once when the partition was
// quiet), so a hot partition costs at most one wake per tick however many
// pushes it takes. Peers get the announcement at
// once on <prefix>.v1.available: a publisher goroutine sends whatever was
// marked since its last message, so an idle bridge announces each push right
// away and a busy one batches many pushes (and their repeated partitions)
// into one message. The Queen-Origin header lets a bridge drop its own
// announcements without decoding them; peers' go into its hot-list. With the
// hot-list off (QUEEN_HOTLIST=0) announcements wake parked reads directly.

// HotlistTick is the period of the coalesced local wake.
const HotlistTick = 5 * time.Millisecond

type partKey struct {
	tenant           [16]byte
	queue, partition string
}

// parked holds the reads waiting for a partition. Read handlers (one
// goroutine each) park and unpark, announcers wake: a mutex guards the map,
// held only for map operations.
type parked struct {
	mu    sync.Mutex
	m     map[partKey]map[chan struct{}]struct{}
	n     atomic.Int64  // reads parked now
	wakes atomic.Uint64 // partition wake events
}

func newParked() *parked { return &parked{m: map[partKey]map[chan struct{}]struct{}{}} }

// park registers a read; its channel receives (at most one pending) wake.
func (p *parked) park(k partKey) chan struct{} {
	ch := make(chan struct{}, 1)
	p.mu.Lock()
	set := p.m[k]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		p.m[k] = set
	}
	set[ch] = struct{}{}
	p.mu.Unlock()
	p.n.Add(1)
	return ch
}

func (p *parked) unpark(k partKey, ch chan struct{}) {
	p.mu.Lock()
	if set := p.m[k]; set != nil {
		delete(set, ch)
		if len(set) == 0 {
			delete(p.m, k)
		}
	}
	p.mu.Unlock()
	p.n.Add(-1)
}

// wake wakes every read parked on k.
func (p *parked) wake(k partKey) {
	p.wakes.Add(1)
	p.mu.Lock()
	for ch := range p.m[k] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	p.mu.Unlock()
}

// keySet collects partitions marked since it was last taken: the hot-list
// (taken once per tick) and the peer announcements (taken by the publisher).
// Announcers mark from many goroutines and one loop takes: a mutex guards
// the set.
type keySet struct {
	mu      sync.Mutex
	pending map[partKey]struct{}
	signal  chan struct{} // cap 1: something is pending
}

func newKeySet() *keySet {
	return &keySet{pending: map[partKey]struct{}{}, signal: make(chan struct{}, 1)}
}

func (h *keySet) mark(k partKey) {
	h.mu.Lock()
	h.pending[k] = struct{}{}
	h.mu.Unlock()
	select {
	case h.signal <- struct{}{}:
	default:
	}
}

func (h *keySet) take() map[partKey]struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.pending) == 0 {
		return nil
	}
	out := h.pending
	h.pending = map[partKey]struct{}{}
	return out
}

// hotlistLoop wakes marked partitions at most once per tick. The first mark
// after a quiet tick wakes at once (an idle partition's reader hears of a
// push without waiting for a tick); marks that arrive during the following
// tick gather and are woken together when it ends. An idle bridge does not
// tick.
func (b *Bridge) hotlistLoop() {
	defer b.bg.Done()
	for {
		select {
		case <-b.quit:
			return
		case <-b.hot.signal:
		}
		for k := range b.hot.take() {
			b.parked.wake(k)
		}
		select { // the tick: what is marked now waits for its end
		case <-b.quit:
			return
		case <-time.After(HotlistTick):
		}
	}
}

// availableMsg is MESSAGE_AVAILABLE on <prefix>.v1.available.
type availableMsg struct {
	Origin string          `json:"origin"`
	Items  []availableItem `json:"items"`
}

type availableItem struct {
	Tenant    string `json:"tenant"`
	Queue     string `json:"queue"`
	Partition string `json:"partition"`
}

func (b *Bridge) availableSubject() string { return b.cfg.Prefix + ".v1.available" }

// originHeader carries the announcing bridge's id.
const originHeader = "Queen-Origin"

// announce tells local parked reads and peers that keys have new messages.
func (b *Bridge) announce(keys []partKey) {
	for _, k := range keys {
		b.notify(k)
		if b.cfg.NATS != nil {
			b.toPeers.mark(k)
		}
	}
}

// publishLoop sends MESSAGE_AVAILABLE with every partition marked since the
// previous message.
func (b *Bridge) publishLoop() {
	defer b.bg.Done()
	for {
		select {
		case <-b.quit:
			return
		case <-b.toPeers.signal:
		}
		keys := b.toPeers.take()
		if len(keys) == 0 {
			continue
		}
		msg := availableMsg{Origin: b.id, Items: make([]availableItem, 0, len(keys))}
		for k := range keys {
			msg.Items = append(msg.Items, availableItem{Tenant: uuid.UUID(k.tenant).String(), Queue: k.queue, Partition: k.partition})
		}
		data, _ := json.Marshal(msg)
		out := &nats.Msg{Subject: b.availableSubject(), Data: data, Header: nats.Header{originHeader: []string{b.id}}}
		if err := b.cfg.NATS.PublishMsg(out); err == nil {
			b.announced.Add(1)
		}
	}
}

// notify wakes k's parked reads: through the hot-list tick, or directly.
func (b *Bridge) notify(k partKey) {
	if b.cfg.DisableHotlist {
		b.parked.wake(k)
		return
	}
	b.hot.mark(k)
}

// onAvailable feeds a peer's announcement into this bridge.
func (b *Bridge) onAvailable(m *nats.Msg) {
	if m.Header.Get(originHeader) == b.id {
		return // our own
	}
	var msg availableMsg
	if json.Unmarshal(m.Data, &msg) != nil || msg.Origin == b.id {
		return
	}
	b.peerAnnouncements.Add(1)
	for _, it := range msg.Items {
		tenant, err := uuid.Parse(it.Tenant)
		if err != nil {
			continue
		}
		b.notify(partKey{tenant: tenant, queue: it.Queue, partition: it.Partition})
	}
}
