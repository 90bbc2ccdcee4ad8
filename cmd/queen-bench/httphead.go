package main

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
)

// httpHead is what the lean client reads of an answer's head: its status,
// how its body is framed, and whether the connection can carry another
// request after it.
type httpHead struct {
	status    int
	length    int  // the Content-Length (0 when there is none)
	hasLength bool // a Content-Length was given
	chunked   bool // Transfer-Encoding: chunked
	close     bool // the sender closes after this message (Connection: close, or HTTP/1.0)
}

// readHead reads one HTTP/1.x answer's head. A Content-Length over
// maxBody, a Transfer-Encoding other than chunked, a folded or malformed
// header line, an interim (1xx) answer, or a status line that does not
// parse is an error, after which the connection is to be closed.
func readHead(r *bufio.Reader, maxBody int) (httpHead, error) {
	var h httpHead
	for first := true; ; first = false {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return httpHead{}, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if first {
			rest, ok := bytes.CutPrefix(line, []byte("HTTP/1.")) // HTTP/1.x NNN reason
			if !ok || len(rest) < 5 || rest[1] != ' ' || (len(rest) > 5 && rest[5] != ' ') {
				return httpHead{}, fmt.Errorf("bad status line %q", line)
			}
			if h.status, err = strconv.Atoi(string(rest[2:5])); err != nil || h.status < 100 {
				return httpHead{}, fmt.Errorf("bad status line %q", line)
			}
			if h.status < 200 {
				return httpHead{}, fmt.Errorf("interim answer %q: none was asked for", line)
			}
			h.close = rest[0] == '0'
			continue
		}
		if len(line) == 0 {
			return h, nil
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok || len(name) == 0 || bytes.ContainsAny(name, " \t") {
			return httpHead{}, fmt.Errorf("bad header line %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			h.length, err = strconv.Atoi(string(value))
			if err != nil || h.length < 0 || h.length > maxBody {
				return httpHead{}, fmt.Errorf("bad Content-Length %q: want 0 to %d", value, maxBody)
			}
			h.hasLength = true
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			if !bytes.EqualFold(value, []byte("chunked")) {
				return httpHead{}, fmt.Errorf("unsupported Transfer-Encoding %q", value)
			}
			h.chunked = true
		case bytes.EqualFold(name, []byte("Connection")):
			for tok := range bytes.SplitSeq(value, []byte(",")) {
				if bytes.EqualFold(bytes.TrimSpace(tok), []byte("close")) {
					h.close = true
				}
			}
		}
	}
}
