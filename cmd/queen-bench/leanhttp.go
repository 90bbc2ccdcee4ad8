package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"strconv"
	"time"
)

// leanHTTP is the HTTP push target's lean client (-http-client lean):
// kept-alive HTTP/1.1 connections of its own, each request written in one
// write and its answer read by Content-Length. net/http's client costs
// queen-bench about twice its NATS client a push; on two shared cores that
// CPU is taken from the bridge, so a closed loop over HTTP would measure
// the load generator as much as the bridge.
type leanHTTP struct {
	addr string
	idle chan *leanClientConn // connections not in use; a request takes one or dials
}

// maxAnswer bounds an answer's body the lean client reads.
const maxAnswer = 64 << 20

// leanTimeout bounds one request and its answer, as the NATS target's
// request timeout does.
const leanTimeout = 30 * time.Second

type leanClientConn struct {
	c   net.Conn
	r   *bufio.Reader
	out []byte
}

func newLeanHTTP(addr string, clients int) *leanHTTP {
	return &leanHTTP{addr: addr, idle: make(chan *leanClientConn, max(clients, 1))}
}

// send posts body to /api/v1/push and answers the 201 answer's body. An
// answer of another status is an error carrying its body; a connection
// that failed (an error, a timeout, an idle connection the bridge closed
// meanwhile: such a push fails and is counted as an error) or that the
// bridge closes is not used again.
func (h *leanHTTP) send(body []byte) ([]byte, error) {
	var lc *leanClientConn
	select {
	case lc = <-h.idle:
	default:
		c, err := net.Dial("tcp", h.addr)
		if err != nil {
			return nil, err
		}
		lc = &leanClientConn{c: c, r: bufio.NewReaderSize(c, 4096)}
	}
	out, keep, err := lc.roundTrip(h.addr, body)
	if !keep {
		lc.c.Close()
		return out, err
	}
	select {
	case h.idle <- lc:
	default:
		lc.c.Close()
	}
	return out, err
}

// close closes the idle connections.
func (h *leanHTTP) close() {
	for {
		select {
		case lc := <-h.idle:
			lc.c.Close()
		default:
			return
		}
	}
}

// roundTrip writes one push and reads its answer; keep says whether the
// connection can carry another.
func (lc *leanClientConn) roundTrip(host string, body []byte) (out []byte, keep bool, err error) {
	if err := lc.c.SetDeadline(time.Now().Add(leanTimeout)); err != nil {
		return nil, false, err
	}
	b := append(lc.out[:0], "POST /api/v1/push HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\nContent-Type: application/json\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(append(b, "\r\n\r\n"...), body...)
	lc.out = b[:0]
	if _, err := lc.c.Write(b); err != nil {
		return nil, false, err
	}
	head, err := readHead(lc.r, maxAnswer)
	if err != nil {
		return nil, false, err
	}
	keep = !head.close
	switch {
	case head.chunked: // net/http's answers of more than a few KiB
		if out, err = io.ReadAll(io.LimitReader(httputil.NewChunkedReader(lc.r), maxAnswer)); err == nil {
			err = skipTrailer(lc.r)
		}
	case head.hasLength:
		out = make([]byte, head.length)
		_, err = io.ReadFull(lc.r, out)
	default: // the body ends where the connection does
		out, err = io.ReadAll(io.LimitReader(lc.r, maxAnswer))
		keep = false
	}
	if err == nil && len(out) >= maxAnswer {
		err = fmt.Errorf("an answer of %d bytes or more", maxAnswer)
	}
	if err != nil {
		return nil, false, err
	}
	if head.status != 201 {
		return nil, keep, fmt.Errorf("HTTP %d: %s", head.status, out)
	}
	return out, keep, nil
}

// skipTrailer reads a chunked body's trailer lines up to the empty one.
func skipTrailer(r *bufio.Reader) error {
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return nil
		}
	}
}
