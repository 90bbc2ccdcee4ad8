package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/queenbridge/queenbridge/internal/jsonscan"
)

// poppedWire is a pop answer as a consumer reads it: of each message only
// what its acknowledgement names and the payload. The json tags are the
// reference popDecoder is tested against (encoding/json's reading of the
// same bytes).
type poppedWire struct {
	Messages []poppedMessage `json:"messages"`
}

type poppedMessage struct {
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	LeaseID       string          `json:"leaseId"`
	Data          json.RawMessage `json:"data"`

	// ids: where the three strings lie in popDecoder.ids while the answer
	// is read (they are made at the end, in one allocation).
	ids [3]idSpan
}

type idSpan struct{ from, to int }

// popDecoder reads the pop answers of one consuming goroutine with the
// zero-copy scanner rather than encoding/json's reflection, which cost most
// of the consumer's CPU per item (CPU taken from the bridge being measured
// on a small machine). It reuses its slices: an answer it returns, and the
// Data of its messages (sub-slices of the answer's bytes), are valid until
// the next decode.
//
// It reads what encoding/json would put in a poppedWire: member names match
// exactly or else case-insensitively, a later duplicate member wins, null
// leaves a string as it was, and a second "messages" array is read into the
// elements the first left, as encoding/json does. It is stricter in one
// way: JSON text must be UTF-8.
type popDecoder struct {
	p   poppedWire
	ids []byte // the identifiers of every message, unescaped, end to end
}

// decode reads answer; an empty answer (nothing to deliver) has no
// messages.
func (d *popDecoder) decode(answer []byte) (*poppedWire, error) {
	// Clear what the last answer left, also past the length: a second
	// "messages" array reuses elements in place.
	clear(d.p.Messages[:cap(d.p.Messages)])
	d.p.Messages, d.ids = d.p.Messages[:0], d.ids[:0]
	if len(answer) == 0 {
		return &d.p, nil
	}
	s := jsonscan.New(answer)
	switch s.Peek() {
	case 'n': // encoding/json reads null as nothing
		if _, err := s.Literal("null"); err != nil {
			return nil, err
		}
	case '{':
		err := object(s, func(name []byte) error {
			if !isName(name, "messages") {
				_, err := s.Value(1)
				return err
			}
			return d.messages(s)
		})
		if err != nil {
			return nil, err
		}
	default:
		if _, err := s.Value(0); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("not a JSON object")
	}
	if !s.AtEnd() {
		return nil, s.ErrAt("data after the answer")
	}
	all := string(d.ids)
	for k := range d.p.Messages {
		m := &d.p.Messages[k]
		m.TransactionID = all[m.ids[0].from:m.ids[0].to]
		m.PartitionID = all[m.ids[1].from:m.ids[1].to]
		m.LeaseID = all[m.ids[2].from:m.ids[2].to]
	}
	return &d.p, nil
}

// messages reads the value of "messages" into d.p.Messages.
func (d *popDecoder) messages(s *jsonscan.Scanner) error {
	switch s.Peek() {
	case 'n': // encoding/json makes the slice nil: earlier elements are gone
		clear(d.p.Messages[:cap(d.p.Messages)])
		d.p.Messages = d.p.Messages[:0]
		_, err := s.Literal("null")
		return err
	case '[':
	default:
		if _, err := s.Value(1); err != nil {
			return err
		}
		return fmt.Errorf("messages is not an array")
	}
	s.Next()
	if s.Peek() == ']' {
		s.Next()
		d.p.Messages = d.p.Messages[:0]
		return nil
	}
	for i := 0; ; i++ {
		// Element i, in place: within the capacity it keeps what an earlier
		// "messages" array put there.
		if i < cap(d.p.Messages) {
			d.p.Messages = d.p.Messages[:i+1]
		} else {
			d.p.Messages = append(d.p.Messages, poppedMessage{})
		}
		if err := d.message(s, &d.p.Messages[i], i); err != nil {
			return err
		}
		switch s.Peek() {
		case ',':
			s.Next()
		case ']':
			s.Next()
			return nil
		default:
			return s.ErrAt("expected ',' or ']'")
		}
	}
}

// message reads element i of "messages" into m.
func (d *popDecoder) message(s *jsonscan.Scanner, m *poppedMessage, i int) error {
	switch s.Peek() {
	case 'n': // encoding/json leaves the element as it is
		_, err := s.Literal("null")
		return err
	case '{':
	default:
		if _, err := s.Value(2); err != nil {
			return err
		}
		return fmt.Errorf("messages[%d] is not an object", i)
	}
	return object(s, func(name []byte) error {
		switch k := field(name); k {
		case -1:
			_, err := s.Value(3)
			return err
		case len(idNames): // data
			v, err := s.Value(3)
			if err != nil {
				return err
			}
			m.Data = v
			return nil
		default:
			return d.id(s, &m.ids[k], i, idNames[k])
		}
	})
}

// idNames are the string members read, in the order of poppedMessage.ids.
var idNames = [...]string{"transactionId", "partitionId", "leaseId"}

// field is the index in idNames of the member name, len(idNames) for data,
// -1 for a member not read. Names match exactly or else under Unicode case
// folding, as encoding/json matches them to fields.
func field(name []byte) int {
	switch string(name) {
	case "transactionId":
		return 0
	case "partitionId":
		return 1
	case "leaseId":
		return 2
	case "data":
		return 3
	}
	ascii := true
	for _, c := range name {
		ascii = ascii && c < utf8.RuneSelf
	}
	for k, want := range [...]string{"transactionId", "partitionId", "leaseId", "data"} {
		// An ASCII name folds to an ASCII one only of its own length: the
		// members not read (most of them) are passed over at that.
		if (!ascii || len(name) == len(want)) && bytes.EqualFold(name, []byte(want)) {
			return k
		}
	}
	return -1
}

// id reads a string member of element i into d.ids, unescaping it only if
// it holds escapes; null leaves it as it was.
func (d *popDecoder) id(s *jsonscan.Scanner, at *idSpan, i int, name string) error {
	switch s.Peek() {
	case '"':
		raw, escaped, err := s.Str()
		if err != nil {
			return err
		}
		from := len(d.ids)
		if escaped {
			d.ids = append(d.ids, jsonscan.Unescape(raw)...)
		} else {
			d.ids = append(d.ids, raw...)
		}
		*at = idSpan{from, len(d.ids)}
		return nil
	case 'n':
		_, err := s.Literal("null")
		return err
	}
	if _, err := s.Value(3); err != nil {
		return err
	}
	return fmt.Errorf("messages[%d].%s is not a string", i, name)
}

// isName: name is want, or equal to it under Unicode case folding.
func isName(name []byte, want string) bool {
	return string(name) == want || bytes.EqualFold(name, []byte(want))
}

// object walks the object at the cursor (jsonscan.Scanner.Members),
// answering member's errors as member returned them.
func object(s *jsonscan.Scanner, member func(name []byte) error) error {
	err := s.Members(member)
	var m *jsonscan.MemberError
	if errors.As(err, &m) {
		return m.Err
	}
	return err
}
