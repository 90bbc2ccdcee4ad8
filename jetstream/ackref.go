package jetstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The ack subject a delivered message carries as its reply, in
// nats-server's 12-token shape, which nats.go and the nats CLI parse
// (domain "_", then where nats-server puts its account hash the partition
// id, and the last token, free in nats-server's shape, the lease epoch):
//
//	$JS.ACK._.<partition id>.<stream>.<consumer>.<delivered>.<offset>.<consumer seq>.<ts ns>.<pending>.<epoch>
//
// On the wire the reply is "<ack subject>@<stored subject>": nats-server
// routes the message on the inbox, shows it under the stored subject and
// gives it the ack subject as its reply.

// AckPrefix starts every ack subject; AckSubjects is what the bridge
// subscribes to.
const (
	AckPrefix   = "$JS.ACK."
	AckSubjects = "$JS.ACK.>"
	ackTokens   = 12
)

// ErrAckSubject: a subject that is not one of the bridge's ack subjects.
var ErrAckSubject = errors.New("jetstream: not an ack subject of this bridge")

// AppendAckSubject appends a's ack subject to dst. a.Stream and a.Consumer
// must be valid names (no '.', '*', '>', white space or '@'), as the API
// checks at consumer create.
func AppendAckSubject(dst []byte, a AckRef) []byte {
	dst = append(dst, AckPrefix...)
	dst = append(dst, "_."...)
	dst = strconv.AppendInt(dst, a.PartitionID, 10)
	dst = append(dst, '.')
	dst = append(dst, a.Stream...)
	dst = append(dst, '.')
	dst = append(dst, a.Consumer...)
	dst = append(dst, '.')
	dst = strconv.AppendUint(dst, a.Delivered, 10)
	dst = append(dst, '.')
	dst = strconv.AppendInt(dst, a.Offset, 10)
	dst = append(dst, '.')
	dst = strconv.AppendUint(dst, a.ConsumerSeq, 10)
	dst = append(dst, '.')
	dst = strconv.AppendInt(dst, a.Timestamp, 10)
	dst = append(dst, '.')
	dst = strconv.AppendUint(dst, a.Pending, 10)
	dst = append(dst, '.')
	dst = strconv.AppendUint(dst, a.Epoch, 10)
	return dst
}

// AppendAckReply appends the reply a delivery carries: a's ack subject,
// '@' and the subject the message was stored under.
func AppendAckReply(dst []byte, a AckRef, subject string) []byte {
	dst = AppendAckSubject(dst, a)
	dst = append(dst, '@')
	return append(dst, subject...)
}

// ParseAckSubject reads an ack subject AppendAckSubject built (without the
// "@subject" part, which nats-server strips). Anything else, such as the
// ack subjects of a JetStream server in the same account, is
// ErrAckSubject.
func ParseAckSubject(subject string) (AckRef, error) {
	var a AckRef
	rest, ok := strings.CutPrefix(subject, AckPrefix+"_.")
	if !ok {
		return a, fmt.Errorf("%w: %q", ErrAckSubject, subject)
	}
	if a, ok := ackFields(rest); ok {
		return a, nil
	}
	// Not the plain form (a token too many or too few, something not a
	// decimal number, no stream or consumer): the general parse says what.
	return parseAckTokens(subject, rest)
}

// parseAckTokens is ParseAckSubject's general parse of the tokens after
// the prefix, rest, of subject: the ack it names or what is wrong.
func parseAckTokens(subject, rest string) (AckRef, error) {
	var a AckRef
	var tok [ackTokens - 3]string
	for i := range tok {
		if i == len(tok)-1 {
			tok[i] = rest
			break
		}
		t, r, found := strings.Cut(rest, ".")
		if !found {
			return a, fmt.Errorf("%w: %q has fewer than %d tokens", ErrAckSubject, subject, ackTokens)
		}
		tok[i], rest = t, r
	}
	if strings.IndexByte(tok[len(tok)-1], '.') >= 0 {
		return a, fmt.Errorf("%w: %q has more than %d tokens", ErrAckSubject, subject, ackTokens)
	}
	var err error
	num := func(i int, name string) uint64 {
		n, e := strconv.ParseUint(tok[i], 10, 63)
		if e != nil && err == nil {
			err = fmt.Errorf("%w: %q: %s %q is not a decimal number", ErrAckSubject, subject, name, tok[i])
		}
		return n
	}
	a.PartitionID = int64(num(0, "partition id"))
	a.Stream, a.Consumer = tok[1], tok[2]
	a.Delivered = num(3, "delivery count")
	a.Offset = int64(num(4, "offset"))
	a.ConsumerSeq = num(5, "consumer sequence")
	a.Timestamp = int64(num(6, "timestamp"))
	a.Pending = num(7, "pending")
	a.Epoch = num(8, "epoch")
	if err != nil {
		return AckRef{}, err
	}
	if a.Stream == "" || a.Consumer == "" {
		return AckRef{}, fmt.Errorf("%w: %q names no stream or consumer", ErrAckSubject, subject)
	}
	return a, nil
}

// ackFields reads the tokens after "$JS.ACK._." in one pass when they
// are what every delivery's ack subject holds: nine tokens, the numbers
// plain decimals below 2⁶³, a stream and a consumer named. False sends the
// caller to the general parse, which says what is wrong.
func ackFields(rest string) (AckRef, bool) {
	var n [ackTokens - 3]uint64
	var stream, consumer string
	field, start := 0, 0
	var v uint64
	for i := 0; i <= len(rest); i++ {
		if i < len(rest) && rest[i] != '.' {
			if field == 1 || field == 2 {
				continue
			}
			c := rest[i] - '0'
			if c > 9 || i-start >= 19 {
				return AckRef{}, false
			}
			v = v*10 + uint64(c) // 19 digits fit in a uint64
			continue
		}
		switch {
		case field >= len(n) || i == start:
			return AckRef{}, false // a token too many, or an empty one
		case field == 1:
			stream = rest[start:i]
		case field == 2:
			consumer = rest[start:i]
		case v > math.MaxInt64:
			return AckRef{}, false
		default:
			n[field] = v
		}
		field, start, v = field+1, i+1, 0
	}
	if field != len(n) {
		return AckRef{}, false
	}
	return AckRef{
		PartitionID: int64(n[0]), Stream: stream, Consumer: consumer, Delivered: n[3], Offset: int64(n[4]),
		ConsumerSeq: n[5], Timestamp: int64(n[6]), Pending: n[7], Epoch: n[8],
	}, true
}

// The bodies of an acknowledgement (nats-server consumer.go; nats.go
// message.go).
var (
	ackAck      = []byte("+ACK")
	ackOK       = []byte("+OK")
	ackNak      = []byte("-NAK")
	ackProgress = []byte("+WPI")
	ackTerm     = []byte("+TERM")
	ackNext     = []byte("+NXT")
)

// ErrAckNext: +NXT (an ack that is also a pull request on the ack's reply).
// The bridge applies the ack and refuses the pull: pull requests go to
// CONSUMER.MSG.NEXT, where they are parked on the consumer's bridge.
var ErrAckNext = errors.New("+NXT is not supported: acknowledge, then send a pull request to $JS.API.CONSUMER.MSG.NEXT")

// ErrAckBody: a body that is no acknowledgement.
var ErrAckBody = errors.New("jetstream: unknown acknowledgement")

// ParseAckBody reads an acknowledgement's body as nats-server does: empty,
// +ACK or +OK acknowledge; -NAK asks for redelivery, after the delay that
// follows as {"delay":<ns>} or a Go duration ("5s"), a delay that does not
// parse being a plain NAK; +WPI (exactly) asks for more time; +TERM stops
// redelivery, with the reason that follows. +NXT is an acknowledgement
// with ErrAckNext; anything else is ErrAckBody.
func ParseAckBody(body []byte) (kind AckKind, delay time.Duration, reason string, err error) {
	switch {
	case len(body) == 0, bytes.Equal(body, ackAck), bytes.Equal(body, ackOK):
		return AckAck, 0, "", nil
	case bytes.HasPrefix(body, ackNext):
		return AckAck, 0, "", ErrAckNext
	case bytes.HasPrefix(body, ackNak):
		arg := bytes.TrimSpace(body[len(ackNak):])
		if len(arg) == 0 {
			return AckNak, 0, "", nil
		}
		if arg[0] == '{' {
			var o nakOptions
			if json.Unmarshal(arg, &o) == nil && o.Delay > 0 {
				delay = o.Delay
			}
		} else if d, e := time.ParseDuration(string(arg)); e == nil && d > 0 {
			delay = d
		}
		return AckNak, delay, "", nil
	case bytes.Equal(body, ackProgress):
		return AckProgress, 0, "", nil
	case bytes.HasPrefix(body, ackTerm):
		return AckTerm, 0, string(bytes.TrimSpace(body[len(ackTerm):])), nil
	}
	return AckAck, 0, "", fmt.Errorf("%w: %.32q", ErrAckBody, body)
}
