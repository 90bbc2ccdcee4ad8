package storage

import (
	"time"

	"github.com/queenbridge/queenbridge/segment"
)

// Message is one stored message, decoded from its segment. Its Frame holds
// what the producer sent: for a JetStream publish also the NATS subject and
// header block (Frame.Subject, Frame.Header; empty for a Queen push).
type Message struct {
	Offset    int64
	Frame     segment.Frame
	CreatedAt time.Time
}
