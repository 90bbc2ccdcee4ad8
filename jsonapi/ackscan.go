package jsonapi

import (
	"math"
	"unicode/utf8"

	"github.com/queenbridge/queenbridge/internal/jsonscan"
)

// The acknowledgement bodies clients send are read on the zero-copy
// scanner: encoding/json's reflection over 100-item batches was about a
// quarter of the bridge's CPU while consumers acknowledged. The scanner is
// exact by construction rather than by imitation: it reads only what it is
// certain encoding/json reads the same way into ackWire (or the batch
// around it), and gives up on anything else, for decodeAckJSON to answer
// as it always has, error text included. It gives up on
//
//   - JSON it cannot scan: bad syntax, invalid UTF-8 (encoding/json takes
//     it, as U+FFFD), nesting near encoding/json's limit of 10,000;
//   - a body that is not an object, an "acknowledgments" that is not an
//     array (null too), an item of it that is not an object;
//   - a batch route body without "acknowledgments";
//   - a member name that holds escapes or other than ASCII, or that
//     matches a member read only case-insensitively (encoding/json's
//     folding: the Kelvin sign is a k);
//   - a member read twice (encoding/json's later one wins, and a later null
//     keeps or clears what the first set, by the field's type);
//   - a value of the wrong type: a string member that is neither a string
//     nor null, a partitionId that is neither a string, an integer (no
//     fraction, no exponent) nor null.
//
// What it reads it hands to acksFrom, as decodeAckJSON does: the rules and
// their messages are one code. A null string member is "", as absent.

// ackRoute is which route's reading of a body is wanted.
type ackRoute uint8

const (
	routeSingle ackRoute = iota // POST /api/v1/ack
	routeBatch                  // POST /api/v1/ack/batch
	routeEither                 // <prefix>.v1.ack: the batch when "acknowledgments" is there
)

// The members the scanner reads: the string members first, in the order of
// scannedAck.strs.
const (
	mTransactionID = iota
	mStatus
	mConsumerGroup
	mLeaseID
	mError
	nStrings
	mPartitionID     = nStrings
	mAcknowledgments = nStrings + 1

	mOther  = -1 // read by neither route: skipped, whatever it holds
	mUnsure = -2 // encoding/json might match it to a member: give up
)

// ackMemberNames are the names of the members, by index.
var ackMemberNames = [...]string{"transactionId", "status", "consumerGroup", "leaseId", "error", "partitionId", "acknowledgments"}

// scannedAck is one acknowledgement (or the body's own members) as
// scanned.
// It holds no pointer: growing a slice of them costs no write barriers, and
// the garbage collector does not scan them.
type scannedAck struct {
	strs [nStrings]span // where each string member lies in ackScan.text; {0, 0}: absent or null
	pid  span           // where partitionId lies in the body, as sent; {0, 0}: absent
	seen uint8          // the members read, by bit
}

// span is where bytes lie, from and to as in a slice expression. (A body
// is far smaller than 2 GiB.)
type span struct{ from, to int32 }

// ackScan reads one body.
type ackScan struct {
	body  []byte
	s     *jsonscan.Scanner
	route ackRoute
	text  []byte       // the string members, unescaped, end to end: one string in the end
	top   scannedAck   // the body's own members, as the single route reads them
	items []scannedAck // the elements of "acknowledgments"
	batch bool         // "acknowledgments" was read: an array
}

// scanAcks reads body as route reads it. ok false: the scanner gave up, and
// acks and err mean nothing.
func scanAcks(body []byte, route ackRoute) (acks []Ack, ok bool, err error) {
	if len(body) > math.MaxInt32 {
		return nil, false, nil
	}
	d := ackScan{body: body, s: jsonscan.New(body), route: route, text: make([]byte, 0, len(body))}
	if d.s.Peek() != '{' || !d.object(&d.top, 1) || !d.s.AtEnd() {
		return nil, false, nil
	}
	if route == routeBatch && !d.batch {
		return nil, false, nil
	}
	all := string(d.text)
	if !d.batch {
		acks, err := acksFrom([]ackFields{d.top.fields(all, body)}, "", false)
		return acks, true, err
	}
	items := make([]ackFields, len(d.items))
	for i := range d.items {
		items[i] = d.items[i].fields(all, body)
	}
	acks, err = acksFrom(items, d.top.fields(all, body).ConsumerGroup, true)
	return acks, true, err
}

// fields is a as acksFrom takes it; all is ackScan.text made a string.
func (a *scannedAck) fields(all string, body []byte) ackFields {
	str := func(m int) string { return all[a.strs[m].from:a.strs[m].to] }
	f := ackFields{TransactionID: str(mTransactionID), Status: str(mStatus), ConsumerGroup: str(mConsumerGroup),
		LeaseID: str(mLeaseID), Error: str(mError)}
	if a.pid != (span{}) {
		f.PartitionID = body[a.pid.from:a.pid.to]
	}
	return f
}

// object reads the members of the object at the cursor (a '{') into a;
// level is how deeply it nests (the body is 1, an acknowledgement 3).
func (d *ackScan) object(a *scannedAck, level int) bool {
	s := d.s
	s.Next() // '{'
	if s.Peek() == '}' {
		s.Next()
		return true
	}
	for {
		name, escaped, err := s.Str()
		if err != nil || escaped || s.Consume(':') != nil {
			return false
		}
		m := ackMember(name)
		if m == mAcknowledgments && (level != 1 || d.route == routeSingle) {
			m = mOther // ackWire has no such member
		}
		switch m {
		case mUnsure:
			return false
		case mOther:
			// Stricter by one than encoding/json's depth limit: a container
			// here nests level+1 deep; Value refuses a scalar in it at
			// 10,000, and encoding/json only a container at 10,001.
			if _, err := s.Value(level + 1); err != nil {
				return false
			}
		default:
			if a.seen&(1<<m) != 0 {
				return false
			}
			a.seen |= 1 << m
			var ok bool
			switch m {
			case mPartitionID:
				ok = d.partition(a, level+1)
			case mAcknowledgments:
				ok = d.acknowledgments()
			default:
				ok = d.str(&a.strs[m])
			}
			if !ok {
				return false
			}
		}
		switch s.Peek() {
		case ',':
			s.Next()
		case '}':
			s.Next()
			return true
		default:
			return false
		}
	}
}

// ackMember is the index in ackMemberNames of a member name, mOther for a
// member neither route reads, mUnsure for a name encoding/json might read
// as one of them under its case folding. (Only "acknowledgments" inside an
// acknowledgement needs no folding check, and gets one.)
func ackMember(name []byte) int {
	switch string(name) {
	case "transactionId":
		return mTransactionID
	case "status":
		return mStatus
	case "consumerGroup":
		return mConsumerGroup
	case "leaseId":
		return mLeaseID
	case "error":
		return mError
	case "partitionId":
		return mPartitionID
	case "acknowledgments":
		return mAcknowledgments
	}
	for _, c := range name {
		if c >= utf8.RuneSelf {
			return mUnsure // a non-ASCII letter may fold to an ASCII one
		}
	}
	for _, want := range ackMemberNames {
		if asciiEqualFold(name, want) {
			return mUnsure
		}
	}
	return mOther
}

// asciiEqualFold: name equals want but for the case of ASCII letters.
func asciiEqualFold(name []byte, want string) bool {
	if len(name) != len(want) {
		return false
	}
	for i, c := range name {
		if lower(c) != lower(want[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// acknowledgments reads the batch's array into d.items.
func (d *ackScan) acknowledgments() bool {
	s := d.s
	if s.Peek() != '[' {
		return false
	}
	s.Next()
	d.batch = true
	if s.Peek() == ']' {
		s.Next()
		return true
	}
	for {
		if s.Peek() != '{' {
			return false // null is an empty acknowledgement to encoding/json
		}
		d.items = append(d.items, scannedAck{})
		if !d.object(&d.items[len(d.items)-1], 3) {
			return false
		}
		switch s.Peek() {
		case ',':
			s.Next()
		case ']':
			s.Next()
			return true
		default:
			return false
		}
	}
}

// str reads a string member into d.text; null leaves it absent.
func (d *ackScan) str(at *span) bool {
	switch d.s.Peek() {
	case '"':
	case 'n':
		_, err := d.s.Literal("null")
		return err == nil
	default:
		return false
	}
	raw, escaped, err := d.s.Str()
	if err != nil {
		return false
	}
	from := int32(len(d.text))
	if escaped {
		// As encoding/json unescapes: a lone surrogate half is U+FFFD.
		d.text = append(d.text, jsonscan.Unescape(raw)...)
	} else {
		d.text = append(d.text, raw...)
	}
	*at = span{from, int32(len(d.text))}
	return true
}

// partition takes the partitionId as sent, when it is a string, an integer
// or null: json.RawMessage holds the same bytes.
func (d *ackScan) partition(a *scannedAck, depth int) bool {
	c := d.s.Peek()
	if c != '"' && c != 'n' && c != '-' && (c < '0' || c > '9') {
		return false
	}
	raw, err := d.s.Value(depth)
	if err != nil {
		return false
	}
	if c != '"' && c != 'n' {
		for _, b := range raw {
			if b == '.' || b == 'e' || b == 'E' {
				return false
			}
		}
	}
	// raw is body[from:to]: its capacity runs to the end of the body's.
	from := cap(d.body) - cap(raw)
	a.pid = span{int32(from), int32(from + len(raw))}
	return true
}
