package jetstream

import (
	"slices"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/auth"
)

// The headers the intake reads; every other header is stored with the
// message (headerBlock) and not acted on.
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
		// Each case returns a refusal of its own: one variable for all
		// of them would be moved to the heap for every Nats- header,
		// Nats-Msg-Id on nearly every message among them.
		switch {
		case name == expectedStreamHeader || name == msgIDHeader:
		case strings.HasPrefix(name, "Nats-Expected-"):
			return &refusal{codeBadRequest, errBadRequest, name + " is not supported: a queen-bridge stream does not check expectations on its state"}
		case name == "Nats-TTL":
			return &refusal{codeBadRequest, errTTLDisabled, name + " is not supported: per-message TTL is disabled"}
		case strings.HasPrefix(name, "Nats-Schedule"):
			return &refusal{codeBadRequest, errSchedulesDisabled, name + " is not supported: message schedules is disabled"}
		case name == "Nats-Incr":
			return &refusal{codeBadRequest, errCountersDisabled, name + " is not supported: message counters is disabled"}
		case strings.HasPrefix(name, "Nats-Batch-"):
			return &refusal{codeBadRequest, errAtomicDisabled, name + " is not supported: atomic publish is disabled"}
		case name == "Nats-Rollup":
			return &refusal{codeBadRequest, errBadRequest, name + " is not supported: rollups are disabled"}
		}
	}
	return nil
}

// headerBlock is the header block of a published message, to store with
// it: "NATS/1.0\r\n", a "Name: value\r\n" line per value, "\r\n"; nil when
// the message has no header. nats.go hands the intake the header decoded
// into a map, not the bytes that came, so the block is written again: names
// in byte order (the map kept no order; JetStream clients publish theirs
// in map order too), each name's values in the order they came, a value
// as nats.go decoded it (its leading blanks gone). Nats-Request-Info is
// left out: nats-server adds it to a publish that crossed accounts, and
// JetStream strips it before storing too. One allocation, of the exact
// size; none for a message without headers.
func headerBlock(h nats.Header) []byte {
	if len(h) == 0 {
		return nil
	}
	var stack [8]string // names on the stack for the usual few headers
	names := stack[:0]
	size := len(hdrLine) + len(crlf)
	for name, vs := range h {
		if name == auth.RequestInfoHeader || len(vs) == 0 {
			continue
		}
		names = append(names, name)
		for _, v := range vs {
			size += len(name) + 2 + len(v) + len(crlf)
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	b := make([]byte, 0, size)
	b = append(b, hdrLine...)
	for _, name := range names {
		for _, v := range h[name] {
			b = append(b, name...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, crlf...)
		}
	}
	return append(b, crlf...)
}

// The framing of a NATS header block.
const (
	hdrLine = "NATS/1.0\r\n"
	crlf    = "\r\n"
)
