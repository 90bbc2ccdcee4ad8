package leaf

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"
)

// handshake makes one connection to u: TCP, the hub's INFO, TLS when
// asked for, CONNECT and PING, then the hub's LS+ for every subscription
// of the account until the PONG. The hub sends that snapshot while it
// handles CONNECT, before it reads the PING (server/leafnode.go
// processLeafNodeConnect, initLeafNodeSmapAndSendSubs), so the PONG marks
// its end.
func (c *Conn) handshake(ctx context.Context, u *url.URL) (*session, error) {
	ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	where := redact(u.String())
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, fmt.Errorf("leaf: connect to %s: %w", where, err)
	}
	deadline, _ := ctx.Deadline()
	_ = nc.SetDeadline(deadline)
	// Close (or the caller's ctx) ends a handshake that waits on the hub.
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	s, err := c.greet(ctx, nc, u)
	if err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("leaf: handshake with %s: %w", where, err)
	}
	_ = s.nc.SetDeadline(time.Time{})
	return s, nil
}

func (c *Conn) greet(ctx context.Context, nc net.Conn, u *url.URL) (*session, error) {
	s := &session{nc: nc, br: bufio.NewReaderSize(nc, bufSize), url: u, subs: newInterest()}
	line, err := readLine(s.br)
	if err != nil {
		return nil, fmt.Errorf("read INFO: %w", err)
	}
	o, err := parseOp(line)
	if err != nil || o.kind != opInfo {
		return nil, fmt.Errorf("the hub did not start with INFO (is this a leafnode listener?): %q", trim(line))
	}
	var info serverInfo
	if err := json.Unmarshal(o.arg, &info); err != nil {
		return nil, fmt.Errorf("the hub's INFO: %w", err)
	}
	if !info.InfoOnConnect && info.LeafNodeURLs == nil {
		return nil, errors.New("this is not a leafnode listener (a client port?): its INFO is a client's")
	}
	s.maxPayload, s.headers = info.MaxPayload, info.Headers
	if c.cfg.TLS != nil || u.Scheme == "tls" || info.TLSRequired {
		conf := c.cfg.TLS.Clone()
		if conf == nil {
			conf = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		if conf.ServerName == "" {
			conf.ServerName = u.Hostname()
		}
		tc := tls.Client(nc, conf)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, fmt.Errorf("TLS: %w", err)
		}
		s.nc = tc
		s.br = bufio.NewReaderSize(tc, bufSize)
	}
	s.bw = bufio.NewWriterSize(s.nc, bufSize)

	ci := connectInfo{User: c.cfg.User, Pass: c.cfg.Password, Token: c.cfg.Token,
		ServerID: c.id, Name: c.cfg.Name, Headers: true, Protocol: 1}
	if ci.User == "" && ci.Pass == "" && ci.Token == "" && u.User != nil {
		ci.User = u.User.Username()
		ci.Pass, _ = u.User.Password()
	}
	js, err := json.Marshal(ci)
	if err != nil {
		return nil, err
	}
	s.bw.WriteString("CONNECT ")
	s.bw.Write(js)
	s.bw.WriteString("\r\nPING\r\n")
	if err := s.bw.Flush(); err != nil {
		return nil, fmt.Errorf("send CONNECT: %w", err)
	}
	for {
		line, err := readLine(s.br)
		if err != nil {
			return nil, fmt.Errorf("wait for the hub's PONG: %w", err)
		}
		o, err := parseOp(line)
		if err != nil {
			return nil, err
		}
		switch o.kind {
		case opPong:
			return s, nil
		case opPing:
			s.bw.WriteString("PONG\r\n")
			if err := s.bw.Flush(); err != nil {
				return nil, fmt.Errorf("answer PING: %w", err)
			}
		case opErr:
			return nil, fmt.Errorf("%w: %s", ErrRefused, o.arg)
		case opSub:
			s.subs.add(o.subject, o.queue, o.weight)
		case opUnsub:
			s.subs.remove(o.subject, o.queue)
		case opMsg:
			if err := skipPayload(s.br, o.size); err != nil {
				return nil, err
			}
		case opInfo:
			// The INFO after CONNECT carries the bound account and
			// permissions; nothing the leaf uses changes.
		case opOther:
		}
	}
}

// trim shortens a line for an error message.
func trim(line []byte) []byte {
	if len(line) > 80 {
		return append(bytes.Clone(line[:80]), "…"...)
	}
	return line
}
