package jsonapi

import (
	"errors"

	"github.com/queenbridge/queenbridge/internal/jsonscan"
)

// Item is one validated item of a push body. Payload is a sub-slice of
// the body: the bytes exactly as sent.
type Item struct {
	Queue         string
	Partition     string
	TransactionID string // "" when the client sent none
	TraceID       string
	Payload       []byte
	// Encoded: Payload is the base64 JSON string of a body that was not
	// JSON (BodyPayload); never set by DecodePush.
	Encoded bool
	// Subject and Header are the NATS subject and header block
	// ("NATS/1.0\r\n…\r\n\r\n", nil when none) of a JetStream publish,
	// stored with the message so that a JetStream consumer gets them back.
	// A Queen push (DecodePush) leaves them empty.
	Subject string
	Header  []byte
	// Mark is the publish relay's place of the message in its source's
	// WAL, stored with the message (segment.Mark has the same fields).
	// DecodePush leaves it nil.
	Mark *Mark
}

// Mark is a relayed message's place in its source's WAL: the slot (the
// source's system identifier, '/', the slot's name), its transaction's
// commit position and its index there.
type Mark struct {
	Slot  string
	LSN   uint64
	Index int32
}

// DefaultPartition is the partition of items that name none.
const DefaultPartition = "Default"

var nullPayload = []byte("null")

// notJSON is the 400 for a body that does not parse.
func notJSON(err error) error {
	return &BadRequest{msg: "body is not JSON: " + err.Error(), cause: err}
}

// members walks the object at the cursor (jsonscan.Scanner.Members):
// fn's errors come back as fn returned them, the scanner's as the 400 for
// a body that does not parse.
func members(s *jsonscan.Scanner, fn func(name []byte) error) error {
	err := s.Members(fn)
	var m *jsonscan.MemberError
	if errors.As(err, &m) {
		return m.Err
	}
	if err != nil {
		return notJSON(err)
	}
	return nil
}

// skip consumes one value; what it is does not matter, only that it parses.
func skip(s *jsonscan.Scanner, depth int) error {
	if _, err := s.Value(depth); err != nil {
		return notJSON(err)
	}
	return nil
}

// DecodePush parses and validates a push body. Every item is checked before
// anything is returned; the first invalid one rejects the whole body.
func DecodePush(body []byte) ([]Item, error) {
	s := jsonscan.New(body)
	var items []Item
	err := arrayMember(s, "items", bodyRefusals{notObject: "body must be a JSON object with an items array",
		notArray: "items must be an array", missing: "items is required"}, func() (err error) {
		items, err = decodeItems(s)
		return err
	})
	if err != nil {
		return nil, err
	}
	return items, nil
}

// bodyRefusals are the 400s of a body that is not an object with its
// array.
type bodyRefusals struct{ notObject, notArray, missing string }

// arrayMember reads a body (s, at its start) that must be a JSON object
// holding the array member name (a push's items, a transaction's
// operations): read reads the array, with the cursor on its '['; the other
// members are skipped. (read takes no scanner: passed one through a func
// value, the scanner would escape to the heap, an allocation per request.)
func arrayMember(s *jsonscan.Scanner, name string, refuse bodyRefusals, read func() error) error {
	if s.Peek() != '{' {
		if err := skip(s, 0); err != nil {
			return err
		}
		return Badf("%s", refuse.notObject)
	}
	seen := false
	err := members(s, func(m []byte) error {
		if string(m) != name {
			return skip(s, 0)
		}
		if s.Peek() != '[' {
			if err := skip(s, 0); err != nil {
				return err
			}
			return Badf("%s", refuse.notArray)
		}
		seen = true
		return read()
	})
	if err != nil {
		return err
	}
	if !s.AtEnd() {
		return notJSON(s.ErrAt("data after the top-level value"))
	}
	if !seen {
		return Badf("%s", refuse.missing)
	}
	return nil
}

// elements walks the array at the cursor (on its '['): each reads element
// i, the cursor on it; the array's end is consumed.
func elements(s *jsonscan.Scanner, each func(i int) error) error {
	s.Next() // '['
	if s.Peek() == ']' {
		s.Next()
		return nil
	}
	for i := 0; ; i++ {
		if err := each(i); err != nil {
			return err
		}
		switch s.Peek() {
		case ',':
			s.Next()
		case ']':
			s.Next()
			return nil
		default:
			return notJSON(s.ErrAt("expected ',' or ']'"))
		}
	}
}

func decodeItems(s *jsonscan.Scanner) ([]Item, error) {
	items := []Item{}
	err := elements(s, func(idx int) error {
		it, err := decodeItem(s, idx)
		if err != nil {
			var bad *BadRequest
			if errors.As(err, &bad) && errors.Is(bad.cause, jsonscan.ErrInvalidUTF8) {
				return Badf("items[%d]: %v", idx, err) // say which item
			}
			return err
		}
		items = append(items, it)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return items, nil
}

func decodeItem(s *jsonscan.Scanner, idx int) (Item, error) {
	if s.Peek() != '{' {
		if err := skip(s, 1); err != nil {
			return Item{}, err
		}
		return Item{}, Badf("items[%d] must be an object", idx)
	}
	var f itemFields
	if err := f.read(s, 1); err != nil {
		return Item{}, err
	}
	return f.item(place{"items", idx})
}

// itemFields are the members of a push item as sent; a transaction's push
// operations are read into them too, so that both wires apply one set of
// rules.
type itemFields struct {
	queue, partition, txid, trace field
	payload, data                 []byte // raw JSON; nil when absent
}

// read reads the item object at the cursor (depth: how deep it sits),
// skipping the members that are not an item's.
func (f *itemFields) read(s *jsonscan.Scanner, depth int) error {
	return members(s, func(name []byte) error {
		if ok, err := f.member(s, name, depth); ok {
			return err
		}
		return skip(s, depth+1)
	})
}

// member reads the member called name at the cursor when it is one of an
// item's (ok false: it is not, and nothing was read). data is kept for the
// transaction wire, where it is payload's synonym; a push ignores it.
func (f *itemFields) member(s *jsonscan.Scanner, name []byte, depth int) (ok bool, err error) {
	raw := func(dst *[]byte) error {
		v, err := s.Value(depth + 1)
		if err != nil {
			return notJSON(err)
		}
		*dst = v
		return nil
	}
	switch string(name) {
	case "queue":
		return true, scanField(s, &f.queue)
	case "partition":
		return true, scanField(s, &f.partition)
	case "transactionId":
		return true, scanField(s, &f.txid)
	case "traceId":
		return true, scanField(s, &f.trace)
	case "payload":
		return true, raw(&f.payload)
	case "data":
		return true, raw(&f.data)
	}
	return false, nil
}

// item applies section 2's rules to the fields of the item at.
func (f *itemFields) item(at place) (Item, error) {
	it := Item{Payload: nullPayload}
	if f.payload != nil {
		it.Payload = f.payload
	}
	var err error
	if it.Queue, err = checkName(at, "queue", f.queue, true, 1); err != nil {
		return it, err
	}
	// Queen's clients send "" for "none": an empty partition is Default, an
	// empty transactionId or traceId is absent.
	if it.Partition, err = checkName(at, "partition", f.partition, false, 0); err != nil {
		return it, err
	}
	if it.Partition == "" {
		it.Partition = DefaultPartition
	}
	if it.TransactionID, err = checkName(at, "transactionId", f.txid, false, 0); err != nil {
		return it, err
	}
	if it.TraceID, err = checkName(at, "traceId", f.trace, false, 0); err != nil {
		return it, err
	}
	return it, nil
}

// scanField reads a value that should be a string; null counts as absent.
func scanField(s *jsonscan.Scanner, f *field) error {
	switch s.Peek() {
	case '"':
		raw, esc, err := s.Str()
		if err != nil {
			return notJSON(err)
		}
		f.set, f.str = true, true
		if esc {
			f.value = jsonscan.Unescape(raw)
			f.lone = jsonscan.HasLoneSurrogate(raw)
		} else {
			f.value = string(raw)
		}
		return nil
	case 'n':
		if _, err := s.Literal("null"); err != nil {
			return notJSON(err)
		}
		*f = field{}
		return nil
	default:
		if err := skip(s, 2); err != nil {
			return err
		}
		f.set, f.str = true, false
		return nil
	}
}
