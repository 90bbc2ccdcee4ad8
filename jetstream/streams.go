package jetstream

import (
	"fmt"
	"strings"
)

// Stream is one stream definition: the name JetStream clients see (and the
// queue its messages go to) and the subjects it captures.
type Stream struct {
	Name    string
	Filters []string
}

// String is the definition as QUEEN_JETSTREAM spells it.
func (s Stream) String() string { return s.Name + "=" + strings.Join(s.Filters, ";") }

// FormatStreams spells streams as QUEEN_JETSTREAM does ("" for none).
func FormatStreams(streams []Stream) string {
	parts := make([]string, len(streams))
	for i, s := range streams {
		parts[i] = s.String()
	}
	return strings.Join(parts, ",")
}

// ParseStreams reads stream definitions, comma-separated
// NAME=FILTER[;FILTER...] ("ORDERS=orders.>,AUDIT=audit.*.events"); white
// space around the parts is ignored, and an empty text is no stream. It
// checks each definition on its own; Check compares them with each other
// and with the bridge's subjects.
func ParseStreams(text string) ([]Stream, error) {
	var out []Stream
	for i, def := range strings.Split(text, ",") {
		def = strings.TrimSpace(def)
		if def == "" {
			continue
		}
		name, filters, ok := strings.Cut(def, "=")
		name = strings.TrimSpace(name)
		if !ok {
			return nil, fmt.Errorf("%w: entry %d (%q) is not NAME=FILTER[;FILTER...]", ErrStreams, i+1, def)
		}
		s := Stream{Name: name}
		for _, f := range strings.Split(filters, ";") {
			if f = strings.TrimSpace(f); f != "" {
				s.Filters = append(s.Filters, f)
			}
		}
		if err := s.check(); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// maxNameBytes bounds a stream name: it is a queue name too.
const maxNameBytes = 255

// check validates one definition: its name (letters, digits, '-', '_') and
// its filters.
func (s Stream) check() error {
	if s.Name == "" || len(s.Name) > maxNameBytes {
		return fmt.Errorf("%w: stream name %q must be 1..%d bytes", ErrStreams, s.Name, maxNameBytes)
	}
	for _, r := range s.Name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("%w: stream name %q: only letters, digits, '-' and '_'", ErrStreams, s.Name)
		}
	}
	if len(s.Filters) == 0 {
		return fmt.Errorf("%w: stream %s has no filter", ErrStreams, s.Name)
	}
	for _, f := range s.Filters {
		if _, err := parseFilter(f); err != nil {
			return fmt.Errorf("%w: stream %s: %v", ErrStreams, s.Name, err)
		}
	}
	return nil
}

// Reserved are subjects no stream may capture besides the bridge's own
// (<prefix>.>): JetStream's API and the system account's, micro services'
// discovery, and the replies clients wait on.
var Reserved = []string{"$JS.>", "$SYS.>", "$SRV.>", "_INBOX.>"}

// Check validates streams together, at start: each on its own (as
// ParseStreams does), names unique, and no two filters (of one stream or of
// two) that some subject matches both, nor a filter that overlaps the
// bridge's own subjects (<prefix>.>) or a Reserved one. The error names
// both sides.
func Check(streams []Stream, prefix string) error {
	_, err := compile(streams, prefix)
	return err
}

// compile checks streams (see Check) and splits their filters.
func compile(streams []Stream, prefix string) ([]*filter, error) {
	own := []string{prefix + ".>"}
	own = append(own, Reserved...)
	var all []*filter
	names := map[string]bool{}
	for i := range streams {
		s := &streams[i]
		if err := s.check(); err != nil {
			return nil, err
		}
		if names[s.Name] {
			return nil, fmt.Errorf("%w: stream %s is defined twice", ErrStreams, s.Name)
		}
		names[s.Name] = true
		for _, text := range s.Filters {
			tokens, _ := parseFilter(text) // checked above
			f := &filter{stream: s, text: text, tokens: tokens}
			for _, t := range tokens {
				f.wild = f.wild || t == "*" || t == ">"
			}
			for _, o := range own {
				ot, _ := parseFilter(o)
				if overlaps(tokens, ot) {
					return nil, fmt.Errorf("%w: stream %s filter %s overlaps the bridge's own subjects %s", ErrOverlap, s.Name, text, o)
				}
			}
			for _, g := range all {
				if overlaps(tokens, g.tokens) {
					return nil, fmt.Errorf("%w: stream %s filter %s overlaps stream %s filter %s", ErrOverlap, s.Name, text, g.stream.Name, g.text)
				}
			}
			all = append(all, f)
		}
	}
	return all, nil
}
