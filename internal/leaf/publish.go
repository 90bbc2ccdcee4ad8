package leaf

import (
	"fmt"
	"strconv"
	"time"
)

// Publish sends a message to the hub: LMSG, or HMSG when header is not
// nil (a whole header block, "NATS/1.0…\r\n\r\n", which may carry a
// status line such as "NATS/1.0 408 Request Timeout"). reply may be any
// subject, a reserved one too (`$JS.ACK.…`); a reply of the form
// `$JS.ACK.<tokens>@<subject>` is delivered by the hub on subject with
// reply `$JS.ACK.<tokens>`. Messages of one Conn leave in the order
// Publish was called; Publish is safe for concurrent use. It returns once
// the message is in the write buffer: a flusher writes it out shortly
// (ErrNotConnected while the connection is being made again: nothing is
// sent).
func (c *Conn) Publish(subject, reply string, header, body []byte) error {
	if err := checkSubject("subject", subject); err != nil {
		return err
	}
	if reply != "" {
		if err := checkSubject("reply", reply); err != nil {
			return err
		}
	}
	if header != nil {
		if err := checkHeader(header); err != nil {
			return err
		}
	}
	// The hub hands a leaf's message to a queue group only when the
	// message names it, as a leaf node's does (server/client.go
	// processMsgResults).
	var qa [4]string
	c.imu.RLock()
	queues := c.subs.queueGroups(qa[:0], subject)
	c.imu.RUnlock()

	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.cur
	switch {
	case c.closed:
		return ErrClosed
	case s == nil:
		return ErrNotConnected
	case header != nil && !s.headers:
		return fmt.Errorf("%w: the hub does not take headers", ErrBadMessage)
	case s.maxPayload > 0 && int64(len(header)+len(body)) > s.maxPayload:
		// The hub would close the connection for it.
		return fmt.Errorf("%w: %d bytes, the hub's max_payload is %d", ErrBadMessage, len(header)+len(body), s.maxPayload)
	}
	w := s.bw
	need := len(subject) + len(reply) + len(header) + len(body) + 64
	for _, q := range queues {
		need += len(q) + 1
	}
	if need > w.Available() {
		// The buffer will be written out inside this call: a hub that
		// stops reading must not hold Publish (and mu) for ever.
		_ = s.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	}
	if header != nil {
		w.WriteString("HMSG ")
	} else {
		w.WriteString("LMSG ")
	}
	w.WriteString(subject)
	switch {
	case len(queues) > 0 && reply != "":
		w.WriteString(" + ")
		w.WriteString(reply)
	case len(queues) > 0:
		w.WriteString(" |")
	case reply != "":
		w.WriteByte(' ')
		w.WriteString(reply)
	}
	for _, q := range queues {
		w.WriteByte(' ')
		w.WriteString(q)
	}
	n := w.AvailableBuffer() // the sizes are written in place: no copy on the heap
	if header != nil {
		n = append(n, ' ')
		n = strconv.AppendInt(n, int64(len(header)), 10)
	}
	n = append(n, ' ')
	n = strconv.AppendInt(n, int64(len(header)+len(body)), 10)
	n = append(n, '\r', '\n')
	w.Write(n)
	w.Write(header)
	w.Write(body)
	if _, err := w.WriteString("\r\n"); err != nil {
		// The buffer filled and its write failed: the connection is gone,
		// and so may be some of the message.
		c.dropLocked(s, err)
		return fmt.Errorf("leaf: write: %w", err)
	}
	if c.holds > 0 {
		c.held = true
	} else {
		c.signal()
	}
	return nil
}

// Hold keeps the flusher from writing what Publish buffers until Release:
// a caller about to publish a batch hands it to the hub in one write,
// where the flusher, woken by its first message, would write it a few
// messages at a time as it finds them. Holds of several goroutines count
// up; each Release wakes the flusher for whatever waits, so a message
// waits no longer than the batch being published beside it. A buffer that
// fills is written at once all the same. Every Hold needs its Release.
func (c *Conn) Hold() {
	c.mu.Lock()
	c.holds++
	c.mu.Unlock()
}

// Release ends a Hold and wakes the flusher when bytes wait. A Release
// without a Hold ends none.
func (c *Conn) Release() {
	c.mu.Lock()
	if c.holds > 0 {
		c.holds--
	}
	if c.held {
		c.held = false
		c.signal()
	}
	c.mu.Unlock()
}

// signal wakes the flusher, once however many messages wait.
func (c *Conn) signal() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// flusher writes out what Publish buffered and sends the keep-alive
// PINGs, until Close.
func (c *Conn) flusher() {
	defer c.wg.Done()
	ping := time.NewTicker(pingInterval)
	defer ping.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.kick:
			c.mu.Lock()
			if s := c.cur; s != nil && s.bw.Buffered() > 0 {
				_ = s.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
				if err := s.bw.Flush(); err != nil {
					c.dropLocked(s, fmt.Errorf("leaf: write: %w", err))
				}
			}
			c.mu.Unlock()
		case <-ping.C:
			c.mu.Lock()
			if s := c.cur; s != nil {
				if c.pingsOut.Add(1) > maxPingsOut {
					c.dropLocked(s, fmt.Errorf("leaf: the hub answered none of %d PINGs", maxPingsOut))
				} else {
					_ = s.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
					s.bw.WriteString("PING\r\n")
					c.signal()
				}
			}
			c.mu.Unlock()
		}
	}
}

// checkSubject refuses what would break the protocol line: an empty
// subject, spaces, control characters.
func checkSubject(what, s string) error {
	if s == "" {
		return fmt.Errorf("%w: empty %s", ErrBadMessage, what)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			return fmt.Errorf("%w: the %s %q holds a space or a control character", ErrBadMessage, what, s)
		}
	}
	return nil
}

// checkHeader refuses a header block the hub or the client would misread.
func checkHeader(h []byte) error {
	const prefix, end = "NATS/1.0", "\r\n\r\n"
	if len(h) < len(prefix)+len(end) || string(h[:len(prefix)]) != prefix || string(h[len(h)-len(end):]) != end {
		return fmt.Errorf("%w: a header block starts with NATS/1.0 and ends with an empty line (CRLF CRLF)", ErrBadMessage)
	}
	return nil
}
