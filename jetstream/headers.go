package jetstream

import (
	"strings"

	"github.com/nats-io/nats.go"
)

// The headers the intake reads; every other header is neither acted on
// nor stored.
const (
	msgIDHeader          = "Nats-Msg-Id"          // the transactionId
	expectedStreamHeader = "Nats-Expected-Stream" // must name the stream
	partitionHeader      = "Queen-Partition"      // overrides the subject's partition
)

// unsupported answers a header that asks for what a JetStream stream can
// do and this one cannot: a condition on the stream's state (the expected
// last sequence or message id), per-message TTLs, schedules, counters,
// rollups, atomic batches. Storing such a message without doing what the
// header asks would break the producer's expectation silently, so it is
// refused, naming the header, and nothing is written. Where nats-server
// has a code for "disabled on this stream" it is that code. Header names
// are matched as nats-server matches them: case and all.
func unsupported(h nats.Header) *refusal {
	for name := range h {
		if !strings.HasPrefix(name, "Nats-") {
			continue
		}
		var r refusal
		switch {
		case name == expectedStreamHeader || name == msgIDHeader:
			continue
		case strings.HasPrefix(name, "Nats-Expected-"):
			r = refusal{codeBadRequest, errBadRequest, name + " is not supported: a queen-bridge stream does not check expectations on its state"}
		case name == "Nats-TTL":
			r = refusal{codeBadRequest, errTTLDisabled, name + " is not supported: per-message TTL is disabled"}
		case strings.HasPrefix(name, "Nats-Schedule"):
			r = refusal{codeBadRequest, errSchedulesDisabled, name + " is not supported: message schedules is disabled"}
		case name == "Nats-Incr":
			r = refusal{codeBadRequest, errCountersDisabled, name + " is not supported: message counters is disabled"}
		case strings.HasPrefix(name, "Nats-Batch-"):
			r = refusal{codeBadRequest, errAtomicDisabled, name + " is not supported: atomic publish is disabled"}
		case name == "Nats-Rollup":
			r = refusal{codeBadRequest, errBadRequest, name + " is not supported: rollups are disabled"}
		default:
			continue
		}
		return &r
	}
	return nil
}
