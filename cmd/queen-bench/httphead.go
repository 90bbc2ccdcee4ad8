package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// httpHead is what the HTTP floor and the lean client read of a message's
// head: an answer's status (0 for a request), the body's length, and
// whether the sender closes the connection after this message.
type httpHead struct {
	status int
	length int
	close  bool
}

// readHead reads one HTTP/1.1 head. A body is framed by Content-Length
// alone (none: 0); a length over maxBody, a Transfer-Encoding, or a first
// line that does not parse is an error, after which the connection is to
// be closed.
func readHead(r *bufio.Reader, maxBody int) (httpHead, error) {
	var h httpHead
	for first := true; ; first = false {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return httpHead{}, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if first {
			if len(line) == 0 {
				return httpHead{}, errors.New("empty first line")
			}
			if rest, ok := bytes.CutPrefix(line, []byte("HTTP/1.")); ok { // an answer: HTTP/1.x NNN reason
				if len(rest) < 5 || rest[1] != ' ' || (len(rest) > 5 && rest[5] != ' ') {
					return httpHead{}, fmt.Errorf("bad status line %q", line)
				}
				if h.status, err = strconv.Atoi(string(rest[2:5])); err != nil || h.status < 100 {
					return httpHead{}, fmt.Errorf("bad status line %q", line)
				}
			}
			continue
		}
		if len(line) == 0 {
			return h, nil
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		value = bytes.TrimSpace(value)
		switch {
		case !ok:
		case bytes.EqualFold(name, []byte("Content-Length")):
			h.length, err = strconv.Atoi(string(value))
			if err != nil || h.length < 0 || h.length > maxBody {
				return httpHead{}, fmt.Errorf("bad Content-Length %q: want 0 to %d", value, maxBody)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return httpHead{}, fmt.Errorf("unsupported Transfer-Encoding %q: only Content-Length bodies are read", value)
		case bytes.EqualFold(name, []byte("Connection")) && bytes.EqualFold(value, []byte("close")):
			h.close = true
		}
	}
}
