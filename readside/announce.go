package readside

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/internal/peers"
	"github.com/queenbridge/queenbridge/internal/tenancy"
)

// Discovery: after a push is answered, every partition it wrote to is
// announced. Locally, the hot-list marks it pending and wakes the partition's
// parked reads at most once per 5 ms tick (at once when the partition was
// quiet), so a hot partition costs at most one wake per tick however many
// pushes it takes. Peers get the announcement at once on
// <prefix>.v1.available: a publisher goroutine sends whatever was marked
// since its last message, so an idle bridge announces each push right away
// and a busy one batches many pushes (and their repeated partitions) into
// one message. The Queen-Origin header lets a bridge drop its own
// announcements without decoding them; peers' go into its hot-list. With the
// hot-list off (QUEEN_HOTLIST=0) announcements wake parked reads directly.

// HotlistTick is the period of the coalesced local wake.
const HotlistTick = 5 * time.Millisecond

// hotlistLoop wakes marked partitions at most once per tick. The first mark
// after a quiet tick wakes at once (an idle partition's reader hears of a
// push without waiting for a tick); marks that arrive during the following
// tick gather and are woken together when it ends. An idle bridge does not
// tick.
func (r *Reads) hotlistLoop() {
	defer r.bg.Done()
	for {
		select {
		case <-r.quit:
			return
		case <-r.hot.signal:
		}
		for k := range r.hot.take() {
			r.parked.wake(k)
		}
		select { // the tick: what is marked now waits for its end
		case <-r.quit:
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

// Announce tells local parked reads, the Listener and peers that keys have
// new messages. With no read parked here, the local part is skipped: a read parks before
// its last look, so one that parks after this check finds the messages.
func (r *Reads) Announce(keys []Key) { r.announce(keys, false) }

// AnnouncePushed is Announce for the partitions a push this bridge answered
// wrote to; the Listener hears them as pushed.
func (r *Reads) AnnouncePushed(keys []Key) { r.announce(keys, true) }

func (r *Reads) announce(keys []Key, pushed bool) {
	local := r.parked.n.Load() > 0
	for _, k := range keys {
		r.cfg.Listener.Heard(k.Tenant, k.Queue, k.Partition, pushed)
		if local {
			r.notify(k)
		}
		if r.cfg.Peers.Enabled() {
			r.toPeers.mark(k)
		}
	}
}

// publishLoop sends MESSAGE_AVAILABLE with every partition marked since the
// previous message.
func (r *Reads) publishLoop() {
	defer r.bg.Done()
	for {
		select {
		case <-r.quit:
			return
		case <-r.toPeers.signal:
		}
		keys := r.toPeers.take()
		if len(keys) == 0 {
			continue
		}
		msg := availableMsg{Origin: r.cfg.Peers.Origin, Items: make([]availableItem, 0, len(keys))}
		for k := range keys {
			msg.Items = append(msg.Items, availableItem{Tenant: uuid.UUID(k.Tenant).String(), Queue: k.Queue, Partition: k.Partition})
		}
		data, _ := json.Marshal(msg)
		if err := r.cfg.Peers.Publish(peers.Available, data); err == nil {
			r.announced.Add(1)
		}
	}
}

// notify wakes k's parked reads: through the hot-list tick, or directly.
func (r *Reads) notify(k Key) {
	if r.cfg.DisableHotlist {
		r.parked.wake(k)
		return
	}
	r.hot.mark(k)
}

// onAvailable feeds a peer's announcement into this bridge (its own are
// dropped by the subscription) and hands it to the Listener. With no read
// parked here and a Listener that keeps nothing it would change (no queue
// consumed through this bridge) it is counted and not decoded, as Announce
// skips its local part: a read parks before its
// last look, so one that parks after this check finds the peer's messages,
// which were committed before they were announced. With several bridges
// under load this spares each the decoding of all the others' writes.
func (r *Reads) onAvailable(m *nats.Msg) {
	local := r.parked.n.Load() > 0
	if !local && !r.cfg.Listener.Listening() {
		// Nothing here would use it: no parked read to wake, and nothing
		// the Listener keeps that it would change.
		r.peerAnnouncements.Add(1)
		return
	}
	var msg availableMsg
	if json.Unmarshal(m.Data, &msg) != nil || msg.Origin == r.cfg.Peers.Origin {
		return
	}
	r.peerAnnouncements.Add(1)
	for _, it := range msg.Items {
		tenant, err := tenancy.Parse(it.Tenant)
		if err != nil {
			continue
		}
		k := Key{Tenant: tenant, Queue: it.Queue, Partition: it.Partition}
		r.cfg.Listener.Heard(k.Tenant, k.Queue, k.Partition, false)
		if local {
			r.notify(k)
		}
	}
}
