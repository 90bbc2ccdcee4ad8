package jsonscan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Scanner walks a JSON document in place. It validates as it goes (RFC 8259
// grammar) and hands out byte ranges of the input, so payloads need neither
// copying nor re-encoding.
type Scanner struct {
	b []byte
	i int
}

// New returns a Scanner at the start of b.
func New(b []byte) *Scanner { return &Scanner{b: b} }

// AtEnd reports whether only white space is left. (Peek also answers 0 for
// a NUL byte in the input.)
func (s *Scanner) AtEnd() bool {
	s.ws()
	return s.i >= len(s.b)
}

// Next consumes the byte Peek returned.
func (s *Scanner) Next() { s.i++ }

var errEOF = errors.New("unexpected end of JSON input")

// ErrAt is the error for what was expected at the cursor (errEOF at the end).
func (s *Scanner) ErrAt(what string) error {
	if s.i >= len(s.b) {
		return errEOF
	}
	return fmt.Errorf("invalid JSON at byte %d: %s", s.i, what)
}

func (s *Scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// Peek returns the next non-space byte without consuming it (0 at the end).
func (s *Scanner) Peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

// Consume consumes c, the next non-space byte, or fails.
func (s *Scanner) Consume(c byte) error {
	if s.Peek() != c {
		return s.ErrAt(fmt.Sprintf("expected %q", c))
	}
	s.i++
	return nil
}

// ErrInvalidUTF8: a string holds bytes that are not UTF-8. JSON text is
// UTF-8 (RFC 8259, section 8.1).
var ErrInvalidUTF8 = errors.New("invalid UTF-8 in a string")

// Str scans a string and returns its raw contents (between the quotes) and
// whether it holds escapes. The contents must be UTF-8.
func (s *Scanner) Str() (raw []byte, escaped bool, err error) {
	if err := s.Consume('"'); err != nil {
		return nil, false, err
	}
	start := s.i
	var high uint64 // the high bits seen: non-ASCII bytes to validate
	for s.i < len(s.b) {
		// Eight plain bytes at a time: most of a string is neither a quote,
		// a backslash nor a control character (the byte loop below was 9 %
		// of the bridge's CPU at 100-item pushes).
		for s.i+8 <= len(s.b) {
			w := binary.LittleEndian.Uint64(s.b[s.i:])
			if specialInWord(w) {
				break
			}
			high |= w
			s.i += 8
		}
		for s.i < len(s.b) && plainByte[s.b[s.i]] {
			high |= uint64(s.b[s.i])
			s.i++
		}
		if s.i >= len(s.b) {
			break
		}
		c := s.b[s.i]
		switch {
		case c == '"':
			raw = s.b[start:s.i]
			if high&0x8080808080808080 != 0 && !utf8.Valid(raw) {
				return nil, false, fmt.Errorf("%w at byte %d", ErrInvalidUTF8, start+invalidAt(raw))
			}
			s.i++
			return raw, escaped, nil
		case c == '\\':
			escaped = true
			s.i++
			if s.i >= len(s.b) {
				return nil, false, errEOF
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if s.i+5 > len(s.b) {
					return nil, false, errEOF
				}
				for _, h := range s.b[s.i+1 : s.i+5] {
					if hexVal(h) < 0 {
						return nil, false, s.ErrAt("bad \\u escape")
					}
				}
				s.i += 5
			default:
				return nil, false, s.ErrAt("bad escape")
			}
		default: // below 0x20
			return nil, false, s.ErrAt("control character in string")
		}
	}
	return nil, false, errEOF
}

// plainByte is true for the bytes a string passes over as they are.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// specialInWord reports whether any byte of w (eight bytes of a string) is
// '"', '\\' or below 0x20: the classic "has zero byte" and "has byte less
// than n" tests, on w xor the repeated byte and on w itself.
func specialInWord(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	hasZero := func(x uint64) uint64 { return (x - ones) & ^x & highs }
	return hasZero(w^(ones*'"'))|hasZero(w^(ones*'\\'))|((w-ones*0x20)&^w&highs) != 0
}

// Value skips one value, validating it, and returns its bytes. depth is
// how deep the value sits; nesting beyond 10,000 levels is refused.
func (s *Scanner) Value(depth int) ([]byte, error) {
	if depth > maxDepth {
		return nil, s.ErrAt("nested too deeply")
	}
	c := s.Peek()
	start := s.i
	switch {
	case c == '{':
		s.i++
		if s.Peek() == '}' {
			s.i++
			return s.b[start:s.i], nil
		}
		for {
			if _, _, err := s.Str(); err != nil {
				return nil, err
			}
			if err := s.Consume(':'); err != nil {
				return nil, err
			}
			if _, err := s.Value(depth + 1); err != nil {
				return nil, err
			}
			switch s.Peek() {
			case ',':
				s.i++
			case '}':
				s.i++
				return s.b[start:s.i], nil
			default:
				return nil, s.ErrAt("expected ',' or '}'")
			}
		}
	case c == '[':
		s.i++
		if s.Peek() == ']' {
			s.i++
			return s.b[start:s.i], nil
		}
		for {
			if _, err := s.Value(depth + 1); err != nil {
				return nil, err
			}
			switch s.Peek() {
			case ',':
				s.i++
			case ']':
				s.i++
				return s.b[start:s.i], nil
			default:
				return nil, s.ErrAt("expected ',' or ']'")
			}
		}
	case c == '"':
		if _, _, err := s.Str(); err != nil {
			return nil, err
		}
	case c == 't':
		return s.Literal("true")
	case c == 'f':
		return s.Literal("false")
	case c == 'n':
		return s.Literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		if err := s.number(); err != nil {
			return nil, err
		}
	default:
		return nil, s.ErrAt("expected a value")
	}
	return s.b[start:s.i], nil
}

const maxDepth = 10000

// Literal consumes lit (true, false, null) and returns its bytes.
func (s *Scanner) Literal(lit string) ([]byte, error) {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return nil, s.ErrAt("bad literal")
	}
	start := s.i
	s.i += len(lit)
	return s.b[start:s.i], nil
}

func (s *Scanner) number() error {
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.b[s.i] == '-' {
		s.i++
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if digits() == 0 {
		return s.ErrAt("bad number")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return s.ErrAt("bad number")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return s.ErrAt("bad number")
		}
	}
	return nil
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// invalidAt is the offset of the first byte of b that is not UTF-8.
func invalidAt(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// HasLoneSurrogate reports whether the contents of a string that Str
// validated escape half of a UTF-16 surrogate pair without the other half
// (Unescape makes it U+FFFD).
func HasLoneSurrogate(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++
		if raw[i] != 'u' {
			continue
		}
		r := rune(hex4(raw[i+1:]))
		i += 4
		switch {
		case r >= 0xD800 && r < 0xDC00:
			if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
				if r2 := rune(hex4(raw[i+3:])); r2 >= 0xDC00 && r2 < 0xE000 {
					i += 6
					continue
				}
			}
			return true
		case r >= 0xDC00 && r < 0xE000:
			return true
		}
	}
	return false
}

// Unescape decodes the contents of a JSON string that Str validated.
func Unescape(raw []byte) string {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch raw[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := rune(hex4(raw[i+1:]))
			i += 4
			if r >= 0xD800 && r < 0xDC00 && i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
				if r2 := rune(hex4(raw[i+3:])); r2 >= 0xDC00 && r2 < 0xE000 {
					r = 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00)
					i += 6
				} else {
					r = utf8.RuneError
				}
			} else if r >= 0xD800 && r < 0xE000 {
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
		default: // '"', '\\', '/'
			out = append(out, raw[i])
		}
	}
	return string(out)
}

func hex4(b []byte) int {
	return hexVal(b[0])<<12 | hexVal(b[1])<<8 | hexVal(b[2])<<4 | hexVal(b[3])
}
