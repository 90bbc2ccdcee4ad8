package bridge

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/queenbridge/queenbridge/internal/jsonscan"
)

// pushItem is one validated item of a push body. Payload is a sub-slice of
// the body: the bytes exactly as sent.
type pushItem struct {
	Queue         string
	Partition     string
	TransactionID string // "" when the client sent none
	TraceID       string
	Payload       []byte
}

// DefaultPartition is the partition of items that name none.
const DefaultPartition = "Default"

var nullPayload = []byte("null")

// badRequest is a request-level error answered 400 and naming what was wrong.
type badRequest struct{ msg string }

func (e *badRequest) Error() string { return e.msg }

func badf(format string, args ...any) error { return &badRequest{msg: fmt.Sprintf(format, args...)} }

// notJSON is the 400 for a body that does not parse.
func notJSON(err error) error { return badf("body is not JSON: %v", err) }

// members walks the object at the cursor (a '{'), calling fn with each
// member's name (unescaped) with the cursor on its value; fn consumes the
// value. The name is only valid during the call: switch on string(name)
// does not allocate.
func members(s *jsonscan.Scanner, fn func(name []byte) error) error {
	s.Next() // '{'
	if s.Peek() == '}' {
		s.Next()
		return nil
	}
	for {
		key, esc, err := s.Str()
		if err != nil {
			return notJSON(err)
		}
		if err := s.Consume(':'); err != nil {
			return notJSON(err)
		}
		if esc {
			key = []byte(jsonscan.Unescape(key))
		}
		if err := fn(key); err != nil {
			return err
		}
		switch s.Peek() {
		case '}':
			s.Next()
			return nil
		case ',':
			s.Next()
		default:
			return notJSON(s.ErrAt("expected ',' or '}'"))
		}
	}
}

// skip consumes one value; what it is does not matter, only that it parses.
func skip(s *jsonscan.Scanner, depth int) error {
	if _, err := s.Value(depth); err != nil {
		return notJSON(err)
	}
	return nil
}

// decodePush parses and validates a push body. Every item is checked before
// anything is returned; the first invalid one rejects the whole body.
func decodePush(body []byte) ([]pushItem, error) {
	s := jsonscan.New(body)
	if s.Peek() != '{' {
		if err := skip(s, 0); err != nil {
			return nil, err
		}
		return nil, badf("body must be a JSON object with an items array")
	}
	var items []pushItem
	seen := false
	err := members(s, func(name []byte) error {
		if string(name) != "items" {
			return skip(s, 0)
		}
		if s.Peek() != '[' {
			if err := skip(s, 0); err != nil {
				return err
			}
			return badf("items must be an array")
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
		return nil, badf("items is required")
	}
	return items, nil
}

func decodeItems(s *jsonscan.Scanner) ([]pushItem, error) {
	s.Next() // '['
	items := []pushItem{}
	if s.Peek() == ']' {
		s.Next()
		return items, nil
	}
	for idx := 0; ; idx++ {
		it, err := decodeItem(s, idx)
		if err != nil {
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

// field is one optional string field of an item as scanned.
type field struct {
	set   bool // present and not null
	str   bool // a string
	value string
}

func decodeItem(s *jsonscan.Scanner, idx int) (pushItem, error) {
	it := pushItem{Payload: nullPayload}
	if s.Peek() != '{' {
		if err := skip(s, 1); err != nil {
			return it, err
		}
		return it, badf("items[%d] must be an object", idx)
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
	if it.Partition, err = checkName(idx, "partition", partition, false, 1); err != nil {
		return it, err
	}
	if !partition.set {
		it.Partition = DefaultPartition
	}
	if it.TransactionID, err = checkName(idx, "transactionId", txid, false, 1); err != nil {
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

const maxNameBytes = 255

// checkName applies the rules shared by queue, partition, transactionId and
// traceId: a string of minLen..255 bytes, valid UTF-8, no control characters.
// checkName validates field name of item idx (idx < 0: a field of the body
// itself). The error's label (items[3].queue) is only built for an error:
// formatting it for every field of every item was 2.6 % of the bridge's CPU
// at one-item pushes.
func checkName(idx int, name string, f field, required bool, minLen int) (string, error) {
	label := func() string {
		if idx < 0 {
			return name
		}
		return "items[" + strconv.Itoa(idx) + "]." + name
	}
	if !f.set {
		if required {
			return "", badf("%s is required", label())
		}
		return "", nil
	}
	if !f.str {
		return "", badf("%s must be a string", label())
	}
	if len(f.value) < minLen || len(f.value) > maxNameBytes {
		return "", badf("%s must be %d..%d bytes, got %d", label(), minLen, maxNameBytes, len(f.value))
	}
	if !utf8.ValidString(f.value) {
		return "", badf("%s must be valid UTF-8", label())
	}
	for _, r := range f.value {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return "", badf("%s must not contain control characters", label())
		}
	}
	return f.value, nil
}
