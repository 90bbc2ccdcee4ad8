package httpserve

import "bytes"

// Head is what a lean route sees of a request's head: the headers a JSON
// POST route decides on.
type Head struct {
	Host          string
	Authorization string
	ContentType   string
	SecFetchSite  string
	ContentLength int64
	// Close: the client asked for the connection to close after the answer.
	Close bool
}

// maxHeadBytes bounds the head a lean connection parses; a longer one is
// handed to net/http, which has limits of its own.
const maxHeadBytes = 8 << 10

// parseHead parses an HTTP/1.1 request head in buf (which ends with its
// blank line, CRLF CRLF) for one of routes. It reports ok only for a head
// the lean loop serves without doubt: the request line "METHOD PATH
// HTTP/1.1" of a route exactly (no query), CRLF line ends, no repeated
// Host, Content-Length, Authorization, Content-Type or Sec-Fetch-Site, a Content-Length of
// digits of at most maxBody, a Host, and no Transfer-Encoding, Expect,
// Upgrade or line folding. Anything else, valid or not, is for net/http to
// serve or refuse, so that every answer to an odd request is its answer.
func parseHead(buf []byte, routes []LeanRoute) (route int, h Head, ok bool) {
	line, rest, found := bytes.Cut(buf, crlf)
	if !found {
		return 0, h, false
	}
	route = -1
	for i, rt := range routes {
		if len(line) == len(rt.Method)+1+len(rt.Path)+len(" HTTP/1.1") &&
			string(line[:len(rt.Method)]) == rt.Method && line[len(rt.Method)] == ' ' &&
			string(line[len(rt.Method)+1:len(rt.Method)+1+len(rt.Path)]) == rt.Path &&
			string(line[len(rt.Method)+1+len(rt.Path):]) == " HTTP/1.1" {
			route = i
			break
		}
	}
	if route < 0 {
		return 0, h, false
	}
	var seen [5]bool // host, content-length, authorization, content-type, sec-fetch-site
	haveLength := false
	for {
		line, rest, found = bytes.Cut(rest, crlf)
		if !found {
			return 0, h, false
		}
		if len(line) == 0 {
			break
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !all(line[:colon], &tokenChar) {
			return 0, h, false // also a folded line: it starts with a space
		}
		name, value := line[:colon], trimOWS(line[colon+1:])
		if !fieldValue(value) {
			return 0, h, false
		}
		once := func(i int) bool {
			if seen[i] {
				return false
			}
			seen[i] = true
			return true
		}
		switch {
		case equalFold(name, "host"):
			if !once(0) {
				return 0, h, false
			}
			if !all(value, &hostChar) {
				return 0, h, false
			}
			h.Host = string(value)
		case equalFold(name, "content-length"):
			n, good := parseLength(value, routes[route].MaxBody)
			if !once(1) || !good {
				return 0, h, false
			}
			h.ContentLength, haveLength = n, true
		case equalFold(name, "authorization"):
			if !once(2) {
				return 0, h, false
			}
			h.Authorization = string(value)
		case equalFold(name, "content-type"):
			if !once(3) {
				return 0, h, false
			}
			h.ContentType = string(value)
		case equalFold(name, "sec-fetch-site"):
			if !once(4) {
				return 0, h, false
			}
			h.SecFetchSite = string(value)
		case equalFold(name, "connection"):
			for _, tok := range bytes.Split(value, []byte(",")) {
				switch tok = trimOWS(tok); {
				case equalFold(tok, "close"):
					h.Close = true
				case equalFold(tok, "upgrade"):
					return 0, h, false
				}
			}
		case equalFold(name, "transfer-encoding"), equalFold(name, "expect"), equalFold(name, "upgrade"):
			return 0, h, false
		}
	}
	if len(rest) != 0 || !seen[0] || !haveLength {
		return 0, h, false
	}
	return route, h, true
}

var crlf = []byte("\r\n")

// parseLength parses a Content-Length of digits alone, at most max.
func parseLength(v []byte, max int64) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, n <= max
}

// tokenChar: the bytes of an RFC 9110 token (a header name); hostChar:
// those net/http admits in a Host (a name, an address, a port).
var (
	tokenChar = alnumAnd("!#$%&'*+-.^_`|~")
	hostChar  = alnumAnd("!$%&'()*+,-.:;=[]_~")
)

// all reports whether every byte of b is in table.
func all(b []byte, table *[128]bool) bool {
	for _, c := range b {
		if c >= 0x80 || !table[c] {
			return false
		}
	}
	return true
}

// alnumAnd is the table of the ASCII letters and digits and of extra.
func alnumAnd(extra string) (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range extra {
		t[c] = true
	}
	return t
}

// fieldValue reports whether v holds no control character but tab, as a
// header value must.
func fieldValue(v []byte) bool {
	for _, c := range v {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// trimOWS trims the optional white space (spaces and tabs) around a value.
func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// equalFold compares b with lower, a lower-case ASCII name, ignoring case.
func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// mayBeLean reports whether b, the first bytes of a request, may still
// become the head of one of the routes whose request lines are lines: a
// prefix of one of them, and no line ended by a bare LF (which net/http
// reads, and the lean loop does not). A request that may not is handed to
// net/http at once, without waiting for its head to end.
func mayBeLean(b []byte, lines []string) bool {
	for i := bytes.IndexByte(b, '\n'); i >= 0; i = nextLF(b, i) {
		if i == 0 || b[i-1] != '\r' {
			return false
		}
	}
	for _, line := range lines {
		k := min(len(b), len(line))
		if string(b[:k]) == line[:k] {
			return true
		}
	}
	return false
}

func nextLF(b []byte, i int) int {
	j := bytes.IndexByte(b[i+1:], '\n')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}
