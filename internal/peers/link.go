package peers

import "github.com/nats-io/nats.go"

// OriginHeader carries the id of the bridge that published a message.
const OriginHeader = "Queen-Origin"

// The broadcasts, as subjects under <prefix>.v1.
const (
	MaintenanceChanged    = "maintenance.changed"
	PopMaintenanceChanged = "maintenance.pop.changed"
	QueueChanged          = "queue.changed"
	Available             = "available"
	MessageDeleted        = "message.deleted"
)

// Link is one bridge's end of the broadcasts. The zero NATS connection is a
// bridge without NATS: publishing does nothing and subscribing returns no
// subscription.
type Link struct {
	NATS   *nats.Conn // nil: no peers
	Prefix string     // subject prefix (QUEEN_NATS_PREFIX)
	Origin string     // this bridge's id
}

// Subject is the full subject of a broadcast.
func (l Link) Subject(name string) string { return l.Prefix + ".v1." + name }

// Enabled reports whether the link reaches any peer.
func (l Link) Enabled() bool { return l.NATS != nil }

// Publish sends data on the broadcast name with this bridge's origin header.
func (l Link) Publish(name string, data []byte) error {
	if l.NATS == nil {
		return nil
	}
	return l.NATS.PublishMsg(&nats.Msg{Subject: l.Subject(name), Data: data, Header: nats.Header{OriginHeader: []string{l.Origin}}})
}

// Subscribe calls fn with every message on the broadcast name; with
// othersOnly, messages this bridge published are dropped before fn. Without
// NATS it returns a nil subscription.
func (l Link) Subscribe(name string, othersOnly bool, fn func(*nats.Msg)) (*nats.Subscription, error) {
	if l.NATS == nil {
		return nil, nil
	}
	return l.NATS.Subscribe(l.Subject(name), func(m *nats.Msg) {
		if othersOnly && m.Header.Get(OriginHeader) == l.Origin {
			return
		}
		fn(m)
	})
}

// Unsubscribe ends sub if there is one.
func Unsubscribe(sub *nats.Subscription) {
	if sub != nil {
		_ = sub.Unsubscribe()
	}
}
