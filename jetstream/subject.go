package jetstream

import (
	"fmt"
	"strings"

	"github.com/queenbridge/queenbridge/jsonapi"
)

// filter is one subject filter of a stream, split into its tokens.
type filter struct {
	stream *Stream
	acks   *jsonapi.PubAcks // the stream's answer templates
	text   string
	tokens []string
	wild   bool // it has a * or > token: the partition comes from the subject
}

// parseFilter checks a filter as nats-server checks a stream's subjects:
// tokens separated by '.', none empty, no white space, '*' and '>' only as
// whole tokens, '>' only last.
func parseFilter(text string) ([]string, error) {
	if text == "" {
		return nil, fmt.Errorf("filter is empty")
	}
	if strings.ContainsAny(text, " \t\r\n") {
		return nil, fmt.Errorf("filter %q holds white space", text)
	}
	tokens := strings.Split(text, ".")
	for i, t := range tokens {
		switch {
		case t == "":
			return nil, fmt.Errorf("filter %q has an empty token", text)
		case t == ">" && i != len(tokens)-1:
			return nil, fmt.Errorf("filter %q: '>' must be the last token", text)
		case t != "*" && t != ">" && strings.ContainsAny(t, "*>"):
			return nil, fmt.Errorf("filter %q: '*' and '>' must be whole tokens", text)
		}
	}
	return tokens, nil
}

// overlaps reports whether some subject matches both filters. '*' matches
// one token, '>' one or more.
func overlaps(a, b []string) bool {
	for i := 0; ; i++ {
		if i == len(a) || i == len(b) {
			return len(a) == len(b)
		}
		x, y := a[i], b[i]
		if x == ">" || y == ">" {
			return true
		}
		if x != "*" && y != "*" && x != y {
			return false
		}
	}
}

// partition is the part of subject that f's wildcards matched, tokens
// joined with '.': "orders.>" and "orders.eu.42" give "eu.42",
// "audit.*.events" and "audit.eu.events" give "eu". subject matches f (the
// server delivered it on f's subscription). The common case, wildcards
// that match one run of tokens, is a substring of subject: no allocation.
func (f *filter) partition(subject string) string {
	var spans [8][2]int
	sp := spans[:0]
	start := 0
	for t := 0; t < len(f.tokens); t++ {
		if start > len(subject) {
			return "" // shorter than the filter: not one of its subjects
		}
		end := strings.IndexByte(subject[start:], '.')
		if end < 0 {
			end = len(subject)
		} else {
			end += start
		}
		switch f.tokens[t] {
		case "*":
			sp = append(sp, [2]int{start, end})
		case ">":
			sp = append(sp, [2]int{start, len(subject)})
			t = len(f.tokens)
		}
		start = end + 1
	}
	if len(sp) == 0 {
		return ""
	}
	contiguous := true
	for i := 1; i < len(sp); i++ {
		if sp[i][0] != sp[i-1][1]+1 {
			contiguous = false
			break
		}
	}
	if contiguous {
		return subject[sp[0][0]:sp[len(sp)-1][1]]
	}
	var b strings.Builder
	for i, s := range sp {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(subject[s[0]:s[1]])
	}
	return b.String()
}
