package jsonapi

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// BadRequest is a request-level error answered 400 and naming what was wrong.
type BadRequest struct {
	msg   string
	cause error // what the message says, when it wraps something
}

func (e *BadRequest) Error() string { return e.msg }

// Badf is a BadRequest with a formatted message.
func Badf(format string, args ...any) error { return &BadRequest{msg: fmt.Sprintf(format, args...)} }

// field is one optional string field of an item as scanned.
type field struct {
	set   bool // present and not null
	str   bool // a string
	lone  bool // it escapes half a UTF-16 surrogate pair (value holds U+FFFD)
	value string
}

const maxNameBytes = 255

// place names an element of a body's list in errors: items[3] of a push,
// operations[2] of a transaction.
type place struct {
	list string // "" for the body itself
	idx  int
}

// checkName applies the rules shared by queue, partition, transactionId and
// traceId: a string of minLen..255 bytes, valid UTF-8, no control characters.
// checkName validates field name of the element at (the zero place:
// a field of the body itself). The error's label (items[3].queue) is only
// built for an error: formatting it for every field of every item was 2.6 %
// of the bridge's CPU at one-item pushes.
func checkName(at place, name string, f field, required bool, minLen int) (string, error) {
	label := func() string {
		if at.list == "" {
			return name
		}
		return at.list + "[" + strconv.Itoa(at.idx) + "]." + name
	}
	if !f.set {
		if required {
			return "", Badf("%s is required", label())
		}
		return "", nil
	}
	if !f.str {
		return "", Badf("%s must be a string", label())
	}
	if len(f.value) < minLen || len(f.value) > maxNameBytes {
		return "", Badf("%s must be %d..%d bytes, got %d", label(), minLen, maxNameBytes, len(f.value))
	}
	if !utf8.ValidString(f.value) {
		return "", Badf("%s must be valid UTF-8", label())
	}
	if f.lone {
		// Unescaped it would be U+FFFD, and two different names one queue.
		return "", Badf("%s must not escape half of a UTF-16 surrogate pair", label())
	}
	for _, r := range f.value {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return "", Badf("%s must not contain control characters", label())
		}
	}
	return f.value, nil
}

// CheckName applies the name rules to a required string field of a request
// body (not of a push item), such as a queue or partition name: 1..255
// bytes. present is false when the field was left out.
func CheckName(name, value string, present bool) error {
	_, err := checkName(place{}, name, field{set: present, str: true, value: value}, true, 1)
	return err
}
