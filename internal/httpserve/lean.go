package httpserve

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"time"
)

// LeanRoute is a route the listener serves itself, without net/http: a
// JSON POST whose head and body the connection reads into buffers of its
// own, answered with one write. A request net/http would read differently
// (chunked, Expect, HTTP/1.0, a query, a body over MaxBody, an odd head) is
// not a lean request: the connection, from that request on, is handed to
// net/http with the bytes already read put back in front.
//
// Unlike net/http's request context, the one Serve gets is not cancelled
// when the client goes away (the loop does not read while Serve runs); it
// is cancelled when the server has stopped.
type LeanRoute struct {
	Method, Path string
	// MaxBody is the largest body served here (a larger one goes to
	// net/http).
	MaxBody int64
	// Budget holds the body's bytes, taken as they arrive (as ReadBody
	// does) and given back once the answer is written; Take waits up to
	// BudgetWait.
	Budget     GiveBudget
	BudgetWait time.Duration
	// BodyTimeout bounds the arrival of a body not read with its head.
	BodyTimeout time.Duration
	// Admit decides on the head, before any of the body is read: status 0
	// admits it; any other is the answer, with out (the body is then not
	// read, and the connection closes after the answer).
	Admit func(h *Head) (status int, out []byte)
	// Refused renders the JSON error answer of a request the loop refuses
	// itself (503 with the budget full, 408 with a body late), and may
	// count it.
	Refused func(status int, msg string) []byte
	// Serve answers an admitted request with a status and a JSON body.
	Serve func(ctx context.Context, h *Head, body []byte) (status int, out []byte)
}

// GiveBudget is a Budget whose bytes are given back.
type GiveBudget interface {
	Budget
	Give(n int64)
}

// leanConn is one connection served by the lean loop; its goroutine owns
// every field but idle, which Server.mu guards (Shutdown reads it).
type leanConn struct {
	s    *Server
	c    net.Conn
	buf  []byte
	r, w int // the bytes read and not yet served: buf[r:w]
	out  []byte
	// served: requests answered; afterPost: how many CR or LF bytes
	// before the next request are still skipped (net/http skips up to 4
	// after a POST).
	served    int
	afterPost int
	idle      bool
}

// errHandedOff ends the lean loop of a connection given to net/http;
// errClosing one whose answer said it closes.
var (
	errHandedOff = errors.New("handed to net/http")
	errClosing   = errors.New("closing after the answer")
)

// serve answers lean requests until the connection closes, fails, or
// sends a request that is not lean.
func (lc *leanConn) serve() {
	defer lc.s.forget(lc)
	defer func() {
		if v := recover(); v != nil {
			lc.s.log.Error().Str("target", "bridge").Interface("panic", v).Bytes("stack", debug.Stack()).Msg("http request")
			_ = lc.c.Close()
		}
	}()
	for {
		end, err := lc.readHead()
		if err == nil {
			err = lc.request(end)
		}
		switch {
		case errors.Is(err, errHandedOff):
			return
		case errors.Is(err, errClosing):
			lc.closeGently()
			return
		case err != nil:
			_ = lc.c.Close()
			return
		}
	}
}

// readHead reads until buf[r:] holds a whole head and reports where it
// ends; a request that cannot be lean hands the connection over. The
// connection counts as idle (Shutdown closes it) until its head is whole.
func (lc *leanConn) readHead() (end int, err error) {
	if !lc.s.setIdle(lc, true) {
		return 0, net.ErrClosed
	}
	if lc.r == lc.w {
		lc.r, lc.w = 0, 0
	}
	// A connection's first request has ReadHeaderTimeout to arrive, a kept
	// one IdleTimeout to begin and then ReadHeaderTimeout to end its head.
	headTimer := lc.served == 0 || lc.r < lc.w
	wait := IdleTimeout
	if headTimer {
		wait = ReadHeaderTimeout
	}
	if err := lc.c.SetReadDeadline(time.Now().Add(wait)); err != nil {
		return 0, err
	}
	for {
		for lc.afterPost > 0 && lc.r < lc.w {
			if lc.buf[lc.r] != '\r' && lc.buf[lc.r] != '\n' {
				lc.afterPost = 0
				break
			}
			lc.r++
			lc.afterPost--
		}
		if i := bytes.Index(lc.buf[lc.r:lc.w], crlfcrlf); i >= 0 {
			if !lc.s.setIdle(lc, false) {
				return 0, net.ErrClosed
			}
			return lc.r + i + len(crlfcrlf), nil
		}
		if lc.w-lc.r >= maxHeadBytes || !mayBeLean(lc.buf[lc.r:lc.w], lc.s.leanLines) {
			return 0, lc.handOff()
		}
		if lc.r > 0 && lc.w == len(lc.buf) {
			lc.w = copy(lc.buf, lc.buf[lc.r:lc.w])
			lc.r = 0
		}
		if lc.w == len(lc.buf) {
			nb := make([]byte, 2*len(lc.buf))
			copy(nb, lc.buf[:lc.w])
			lc.buf = nb
		}
		if lc.w > lc.r && !headTimer {
			headTimer = true
			if err := lc.c.SetReadDeadline(time.Now().Add(ReadHeaderTimeout)); err != nil {
				return 0, err
			}
		}
		n, err := lc.c.Read(lc.buf[lc.w:])
		lc.w += n
		if errors.Is(err, io.EOF) && lc.w > lc.r {
			// A head cut short: net/http's to answer (400), as for any odd
			// request.
			return 0, lc.handOff()
		}
		if err != nil {
			return 0, err
		}
	}
}

var crlfcrlf = []byte("\r\n\r\n")

// request serves the request whose head is buf[r:end].
func (lc *leanConn) request(end int) error {
	route, h, ok := parseHead(lc.buf[lc.r:end], lc.s.lean)
	if !ok {
		return lc.handOff()
	}
	rt := &lc.s.lean[route]
	lc.served++
	if status, out := rt.Admit(&h); status != 0 {
		return errors.Join(lc.answer(status, out, true), errClosing)
	}
	lc.r = end
	body, taken, status, msg := lc.readBody(rt, h.ContentLength)
	defer rt.Budget.Give(taken)
	if status != 0 {
		return errors.Join(lc.answer(status, rt.Refused(status, msg), true), errClosing)
	}
	lc.afterPost = 4
	status, out := rt.Serve(lc.s.ctx, &h, body)
	closing := h.Close || lc.s.stopping()
	err := lc.answer(status, out, closing)
	if err == nil && closing {
		err = errClosing
	}
	return err
}

// readBody reads the n bytes of body that follow the head (those already
// in buf first), taking them from the budget in ReadBody's steps
// (growBody: a declared length is a promise, not an allocation), within
// the route's BodyTimeout. It reports the bytes taken, on failure too; a
// failure has its status (503, 408, or 400 for a body cut short) and
// message.
func (lc *leanConn) readBody(rt *LeanRoute, n int64) (body []byte, taken int64, status int, msg string) {
	body = []byte{}
	timed := false
	for int64(len(body)) < n {
		if len(body) == cap(body) {
			var grew int64
			var ok bool
			if body, grew, ok = growBody(lc.s.ctx, body, n, rt.Budget, rt.BudgetWait); !ok {
				return nil, taken, http.StatusServiceUnavailable, ErrBusy.Error()
			}
			taken += grew
		}
		room := body[len(body):cap(body)] // growBody never passes n
		if lc.r < lc.w {
			k := copy(room, lc.buf[lc.r:lc.w])
			body, lc.r = body[:len(body)+k], lc.r+k
			continue
		}
		if !timed {
			timed = true
			if err := lc.c.SetReadDeadline(time.Now().Add(rt.BodyTimeout)); err != nil {
				return nil, taken, http.StatusBadRequest, "reading the body: " + err.Error()
			}
		}
		k, err := lc.c.Read(room)
		body = body[:len(body)+k]
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, taken, http.StatusRequestTimeout, "the body did not arrive within " + rt.BodyTimeout.String()
		case err != nil && int64(len(body)) < n:
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, taken, http.StatusBadRequest, "reading the body: " + err.Error()
		}
	}
	return body, taken, 0, ""
}

// answer writes one answer within WriteTimeout, in one write.
func (lc *leanConn) answer(status int, out []byte, closing bool) error {
	b := append(lc.out[:0], "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(status)...)
	b = append(b, "\r\nContent-Type: application/json\r\nDate: "...)
	b = time.Now().UTC().AppendFormat(b, http.TimeFormat)
	b = append(b, "\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(out)), 10)
	if closing {
		b = append(b, "\r\nConnection: close"...)
	}
	b = append(b, "\r\n\r\n"...)
	if err := lc.c.SetWriteDeadline(time.Now().Add(WriteTimeout)); err != nil {
		return err
	}
	var err error
	if len(out) <= 16<<10 {
		b = append(b, out...)
		_, err = lc.c.Write(b)
	} else {
		bufs := net.Buffers{b, out}
		_, err = bufs.WriteTo(lc.c)
	}
	if cap(b) <= 32<<10 {
		lc.out = b[:0]
	}
	return err
}

// handOff gives the connection, with what it has not served, to net/http;
// while the server stops it closes it instead, as net/http closes an idle
// connection then.
func (lc *leanConn) handOff() error {
	if lc.s.stopping() {
		return net.ErrClosed
	}
	if err := lc.c.SetDeadline(time.Time{}); err != nil {
		return err
	}
	lc.s.forget(lc)
	lc.s.handoff.give(&replayConn{Conn: lc.c, pending: bytes.Clone(lc.buf[lc.r:lc.w])})
	return errHandedOff
}

// closeGently closes a connection after an answer that said so, so that
// the client reads the answer: its sending side first, then what the
// client still sends (unread body bytes, pipelined requests) is read and
// dropped for up to half a second, as net/http does; closing a socket with
// unread bytes resets it, and the client may lose the answer.
func (lc *leanConn) closeGently() {
	if cw, ok := lc.c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		_ = lc.c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		_, _ = io.Copy(io.Discard, io.LimitReader(lc.c, 256<<10))
	}
	_ = lc.c.Close()
}
