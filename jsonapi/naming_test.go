package jsonapi

import (
	"bytes"
	"testing"
	"time"
)

// Every encoder is Append…(dst, …): it appends to dst, keeping what dst
// holds, and writes the same bytes whatever dst held. The front door and
// the rooms render an answer into a buffer they already hold (a pooled one,
// or one with a prefix), which a function that returned a fresh slice
// would silently drop.
func TestEncodersAppendToDst(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	acks := NewPubAcks("ORDERS")
	encoders := map[string]func(dst []byte) []byte{
		"AppendError":    func(dst []byte) []byte { return AppendError(dst, `bad "x"`) },
		"AppendResource": func(dst []byte) []byte { return AppendResource(dst, map[string]int{"n": 1}) },
		"AppendRequeued": func(dst []byte) []byte {
			return AppendRequeued(dst, []Requeued{{TransactionID: "t", PartitionID: 7}}, false)
		},
		"AppendTxnFailure":  func(dst []byte) []byte { return AppendTxnFailure(dst, uuidA, "rolled back") },
		"AppendTxnAnswer":   func(dst []byte) []byte { return AppendTxnAnswer(dst, uuidA, nil) },
		"AppendMaintenance": func(dst []byte) []byte { return AppendMaintenance(dst, Maintenance{On: true}) },
		"AppendLeaseAnswer": func(dst []byte) []byte { return AppendLeaseAnswer(dst, "l", at, true) },
		"AppendHealth": func(dst []byte) []byte {
			_, out := AppendHealth(dst, "up", "disabled")
			return out
		},
		"AppendHealthBehind": func(dst []byte) []byte {
			return AppendHealthBehind(dst, []byte(`{"status":"healthy"}`), []string{"db/slot"})
		},
		"AppendOwnersWithTenant": func(dst []byte) []byte {
			return AppendOwnersWithTenant(dst, []byte(`{"version":"v"}`), uuidB)
		},
		"AppendQueueConfigured": func(dst []byte) []byte {
			out, err := AppendQueueConfigured(dst, &QueueConfigured{Queue: "q"})
			if err != nil {
				t.Fatal(err)
			}
			return out
		},
		"AppendStreamConflict": func(dst []byte) []byte {
			return AppendStreamConflict(dst, uuidA, "q", "h1", "h2")
		},
		"AppendStreamCycleFailure": func(dst []byte) []byte { return AppendStreamCycleFailure(dst, uuidA, 7, "rolled back") },
		"PubAcks.AppendQueued":     func(dst []byte) []byte { return acks.AppendQueued(dst, 4) },
		"PubAcks.AppendBuffered":   func(dst []byte) []byte { return acks.AppendBuffered(dst) },
		"OpenMessages…CloseMessages": func(dst []byte) []byte {
			return CloseMessages(AppendMessage(OpenMessages(dst), 1, uuidA, "t", "", []byte(`{}`), false, at), 2)
		},
	}
	for name, enc := range encoders {
		alone := enc(nil)
		prefix := []byte(`prefix,`)
		got := enc(append(make([]byte, 0, 1024), prefix...))
		if !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], alone) {
			t.Errorf("%s after %q wrote %q; alone it writes %q", name, prefix, got, alone)
		}
	}
}
