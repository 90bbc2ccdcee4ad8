package jsonapi

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// Ack is one acknowledgement as Queen's clients send it.
type Ack struct {
	TransactionID string `json:"transactionId"`
	PartitionID   int64  `json:"-"`
	Status        string `json:"status"`
	ConsumerGroup string `json:"consumerGroup"`
	LeaseID       string `json:"leaseId"`
	Error         string `json:"error"`
	// Lease is LeaseID parsed; nil when none was named.
	Lease *[16]byte `json:"-"`
}

// ackWire is an acknowledgement as encoding/json reads it (decodeAckJSON).
type ackWire struct {
	TransactionID *string         `json:"transactionId"`
	PartitionID   json.RawMessage `json:"partitionId"`
	Status        string          `json:"status"`
	ConsumerGroup string          `json:"consumerGroup"`
	LeaseID       *string         `json:"leaseId"`
	Error         *string         `json:"error"`
}

// ackFields is one acknowledgement as sent, whichever reader read it: each
// string "" when absent or null (the rules treat them alike), the
// partitionId as the JSON sent (nil when absent). acksFrom applies the
// rules to it.
type ackFields struct {
	TransactionID, Status, ConsumerGroup, LeaseID, Error string
	PartitionID                                          []byte
}

// DecodeAck reads POST /api/v1/ack (batch false: one acknowledgement) or
// /api/v1/ack/batch ({"acknowledgments": [...], "consumerGroup"}: a group
// named on an item wins over the body's). Every item needs transactionId
// and partitionId (a string of digits or a number); status defaults to
// completed and must be one of completed, success, failed, dlq, retry.
//
// The body is read as encoding/json reads it into ackWire. The bodies
// clients send are read by the scanner (ackscan.go), which gives up on
// anything it cannot read exactly so; encoding/json reads those.
func DecodeAck(body []byte, batch bool) ([]Ack, error) {
	route := routeSingle
	if batch {
		route = routeBatch
	}
	if acks, ok, err := scanAcks(body, route); ok {
		return acks, err
	}
	return decodeAckJSON(body, batch)
}

// DecodeAnyAck reads the body of <prefix>.v1.ack: with an
// "acknowledgments" member (null too) a batch (as POST /api/v1/ack/batch),
// anything else one acknowledgement (as POST /api/v1/ack). The scanner
// tells which in the pass that reads it.
func DecodeAnyAck(body []byte) ([]Ack, error) {
	if acks, ok, err := scanAcks(body, routeEither); ok {
		return acks, err
	}
	return decodeAnyAckJSON(body)
}

// decodeAckJSON is DecodeAck on encoding/json: the reading the scanner is
// held to, and the one that answers what the scanner gives up on.
func decodeAckJSON(body []byte, batch bool) ([]Ack, error) {
	var wires []ackWire
	group := ""
	if batch {
		var b struct {
			Acks          *[]ackWire `json:"acknowledgments"`
			ConsumerGroup string     `json:"consumerGroup"`
		}
		if err := json.Unmarshal(body, &b); err != nil {
			return nil, notJSON(err)
		}
		if b.Acks == nil {
			return nil, Badf("acknowledgments must be an array")
		}
		wires, group = *b.Acks, b.ConsumerGroup
	} else {
		var w ackWire
		if err := json.Unmarshal(body, &w); err != nil {
			return nil, notJSON(err)
		}
		wires = []ackWire{w}
	}
	items := make([]ackFields, len(wires))
	for i, w := range wires {
		items[i] = ackFields{TransactionID: deref(w.TransactionID), PartitionID: w.PartitionID, Status: w.Status,
			ConsumerGroup: w.ConsumerGroup, LeaseID: deref(w.LeaseID), Error: deref(w.Error)}
	}
	return acksFrom(items, group, batch)
}

// decodeAnyAckJSON is DecodeAnyAck on encoding/json. It looks for the
// member first and then reads the body as that route does: decoded in one
// pass together, the single acknowledgement's fields refused batches whose
// top-level members the batch route ignores, and errors read differently.
func decodeAnyAckJSON(body []byte) ([]Ack, error) {
	var probe struct {
		Acks json.RawMessage `json:"acknowledgments"` // "null" when sent as null
	}
	batch := json.Unmarshal(body, &probe) == nil && probe.Acks != nil
	return decodeAckJSON(body, batch)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// acksFrom checks the acknowledgements as sent and fills in their
// defaults; group is a batch's consumerGroup. Both readers end here: the
// rules and their messages are this code only. An error's label
// (acknowledgments[3].) is only built for the error.
func acksFrom(items []ackFields, group string, batch bool) ([]Ack, error) {
	at := func(i int) string {
		if !batch {
			return ""
		}
		return "acknowledgments[" + strconv.Itoa(i) + "]."
	}
	out := make([]Ack, len(items))
	var leases [][16]byte // the items' leases, in one allocation
	checked := ""         // a group that follows the name rules: most items share one
	for i := range items {
		w := &items[i]
		if w.TransactionID == "" {
			return nil, Badf("%stransactionId is required", at(i))
		}
		pid, err := partitionID(w.PartitionID)
		if err != nil {
			return nil, Badf("%spartitionId %s", at(i), err.Error())
		}
		a := Ack{TransactionID: w.TransactionID, PartitionID: pid, Status: w.Status, ConsumerGroup: w.ConsumerGroup}
		if a.ConsumerGroup == "" {
			a.ConsumerGroup = group
		}
		if a.ConsumerGroup == "" {
			a.ConsumerGroup = QueueModeGroup
		}
		if a.ConsumerGroup != checked {
			if err := CheckName(at(i)+"consumerGroup", a.ConsumerGroup, true); err != nil {
				return nil, err
			}
			checked = a.ConsumerGroup
		}
		switch a.Status {
		case "":
			a.Status = "completed"
		case "completed", "success", "failed", "dlq", "retry":
		default:
			return nil, Badf("%sstatus must be completed, success, failed, dlq or retry, got %q", at(i), a.Status)
		}
		a.Error = w.Error
		if w.LeaseID != "" {
			id, err := ParseUUID(w.LeaseID)
			if err != nil {
				return nil, Badf("%sleaseId must be a UUID, got %q", at(i), w.LeaseID)
			}
			if leases == nil {
				leases = make([][16]byte, len(items))
			}
			leases[i] = id
			a.LeaseID, a.Lease = w.LeaseID, &leases[i]
		}
		out[i] = a
	}
	return out, nil
}

// partitionID reads a partition id sent as a string of digits or a number.
func partitionID(raw []byte) (int64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return 0, Badf("is required")
	}
	var s string // s does not escape: its conversions need no allocation
	switch {
	case raw[0] != '"':
		s = string(raw)
	case len(raw) >= 2 && plainDigits(raw[1:len(raw)-1]):
		// What encoding/json would unquote it to, without its reflection.
		s = string(raw[1 : len(raw)-1])
	default:
		var err error
		if s, err = unquote(raw); err != nil {
			return 0, Badf("must be a string of digits")
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 {
		return 0, Badf("must be a partition id (a positive integer), got %s", raw)
	}
	return n, nil
}

// unquote is the JSON string raw as encoding/json reads it.
func unquote(raw []byte) (string, error) {
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// plainDigits: b is one or more ASCII digits and nothing else.
func plainDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// ParseUUID reads a UUID in its text form (with or without dashes): with
// every '-' left out, 32 hex digits. The id is zero with an error.
func ParseUUID(s string) ([16]byte, error) {
	var id [16]byte
	if len(s) == 36 && s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-' {
		// The form clients send, 8-4-4-4-12, without the walk below: a
		// byte that is not a hex digit (a '-' too) fails both ways.
		bad := byte(0)
		for k, at := range uuidPairs {
			hi, lo := hexValue[s[at]], hexValue[s[at+1]]
			bad |= hi | lo
			id[k] = hi<<4 | lo
		}
		if bad > 0xf {
			return [16]byte{}, Badf("not a UUID: %q", s)
		}
		return id, nil
	}
	n := 0 // hex digits read
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '-' {
			continue
		}
		v := hexValue[c]
		if v > 0xf || n == 32 {
			return [16]byte{}, Badf("not a UUID: %q", s)
		}
		id[n>>1] = id[n>>1]<<4 | v
		n++
	}
	if n != 32 {
		return [16]byte{}, Badf("not a UUID: %q", s)
	}
	return id, nil
}

// uuidPairs are where the bytes of a UUID lie in its 8-4-4-4-12 form.
var uuidPairs = [16]int{0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34}

// hexValue is the value of each hex digit (either case), 0xff for any
// other byte.
var hexValue = func() (t [256]byte) {
	for c := range t {
		switch {
		case c >= '0' && c <= '9':
			t[c] = byte(c - '0')
		case c >= 'a' && c <= 'f':
			t[c] = byte(c-'a') + 10
		case c >= 'A' && c <= 'F':
			t[c] = byte(c-'A') + 10
		default:
			t[c] = 0xff
		}
	}
	return t
}()
