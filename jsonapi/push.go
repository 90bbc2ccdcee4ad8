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
	if s.Peek() != '{' {
		if err := skip(s, 0); err != nil {
			return nil, err
		}
		return nil, Badf("body must be a JSON object with an items array")
	}
	var items []Item
	seen := false
	err := members(s, func(name []byte) error {
		if string(name) != "items" {
			return skip(s, 0)
		}
		if s.Peek() != '[' {
			if err := skip(s, 0); err != nil {
				return err
			}
			return Badf("items must be an array")
		}
		var err error
		items, err = decodeItems(s)
		seen = true
		return err
	})
	if err != nil {
		return nil, err
	}
	if !s.AtEnd() {
		return nil, notJSON(s.ErrAt("data after the top-level value"))
	}
	if !seen {
		return nil, Badf("items is required")
	}
	return items, nil
}

func decodeItems(s *jsonscan.Scanner) ([]Item, error) {
	s.Next() // '['
	items := []Item{}
	if s.Peek() == ']' {
		s.Next()
		return items, nil
	}
	for idx := 0; ; idx++ {
		it, err := decodeItem(s, idx)
		if err != nil {
			var bad *BadRequest
			if errors.As(err, &bad) && errors.Is(bad.cause, jsonscan.ErrInvalidUTF8) {
				return nil, Badf("items[%d]: %v", idx, err) // say which item
			}
			return nil, err
		}
		items = append(items, it)
		switch s.Peek() {
		case ',':
			s.Next()
		case ']':
			s.Next()
			return items, nil
		default:
			return nil, notJSON(s.ErrAt("expected ',' or ']'"))
		}
	}
}

func decodeItem(s *jsonscan.Scanner, idx int) (Item, error) {
	it := Item{Payload: nullPayload}
	if s.Peek() != '{' {
		if err := skip(s, 1); err != nil {
			return it, err
		}
		return it, Badf("items[%d] must be an object", idx)
	}
	var queue, partition, txid, trace field
	err := members(s, func(name []byte) error {
		switch string(name) {
		case "queue":
			return scanField(s, &queue)
		case "partition":
			return scanField(s, &partition)
		case "transactionId":
			return scanField(s, &txid)
		case "traceId":
			return scanField(s, &trace)
		case "payload":
			v, err := s.Value(2)
			if err != nil {
				return notJSON(err)
			}
			it.Payload = v
			return nil
		}
		return skip(s, 2)
	})
	if err != nil {
		return it, err
	}
	if it.Queue, err = checkName(idx, "queue", queue, true, 1); err != nil {
		return it, err
	}
	// Queen's clients send "" for "none": an empty partition is Default, an
	// empty transactionId or traceId is absent.
	if it.Partition, err = checkName(idx, "partition", partition, false, 0); err != nil {
		return it, err
	}
	if it.Partition == "" {
		it.Partition = DefaultPartition
	}
	if it.TransactionID, err = checkName(idx, "transactionId", txid, false, 0); err != nil {
		return it, err
	}
	if it.TraceID, err = checkName(idx, "traceId", trace, false, 0); err != nil {
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
