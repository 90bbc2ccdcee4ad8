package leaf

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

const (
	// handshakeTimeout bounds one connection attempt: TCP, INFO, TLS,
	// CONNECT and the PONG that ends the hub's first burst of LS+.
	handshakeTimeout = 10 * time.Second
	// writeTimeout bounds one flush: a hub that takes no bytes for this
	// long is taken for gone, and the connection is made again.
	writeTimeout = 10 * time.Second
	// pingInterval and maxPingsOut find a hub that vanished without
	// closing the socket: a PING every interval, and the connection is
	// made again when this many went unanswered.
	pingInterval = 30 * time.Second
	maxPingsOut  = 2
	// The wait between attempts to connect again doubles from
	// backoffMin to backoffMax.
	backoffMin = 50 * time.Millisecond
	backoffMax = 5 * time.Second
	// bufSize is the read and write buffer of a connection.
	bufSize = 32 << 10
)

// Conn is a leafnode connection to a nats-server (the hub). It keeps
// itself connected until Close.
type Conn struct {
	cfg  Config
	urls []*url.URL
	id   string // server_id in CONNECT
	log  zerolog.Logger

	ctx    context.Context // cancelled by Close: ends dials, waits and handshakes
	cancel context.CancelFunc
	wg     sync.WaitGroup // the reader and the flusher

	// mu guards the writing side: callers of Publish write into cur's
	// buffer under it, the flusher flushes it, the reader swaps cur when
	// the connection is made again, Close marks closed. One lock keeps
	// the bytes of one message together and the messages of the Conn in
	// the order Publish was called.
	mu     sync.Mutex
	cur    *session // nil while disconnected
	closed bool
	holds  int  // Hold calls not yet released: Publish leaves the flusher asleep
	held   bool // Publish left bytes for a Release to hand to the flusher

	// kick tells the flusher that a buffer holds bytes: a Publish leaves
	// them there and returns, the flusher writes whatever gathered by the
	// time it takes mu, so a burst of small messages becomes few writes.
	kick     chan struct{}
	pingsOut atomic.Int32 // PINGs sent without a PONG back

	// imu guards subs: the reader writes it (LS+, LS-, a new connection's
	// snapshot), Publish and Interested read it from any goroutine.
	imu  sync.RWMutex
	subs *interest

	lost atomic.Pointer[func(string)]
}

// session is one TCP (or TLS) connection and what its hub said.
type session struct {
	nc         net.Conn
	br         *bufio.Reader
	bw         *bufio.Writer
	url        *url.URL
	maxPayload int64
	headers    bool
	subs       *interest // the hub's LS+ until the handshake's PONG; then Conn.subs owns the interest
	cause      error     // why it was dropped, when the flusher dropped it (guarded by Conn.mu)
}

// Dial connects to the hub and returns once the hub has sent the
// subscriptions it knows (so Interested is right from the start). From
// then on the Conn connects again by itself, with backoff, whenever the
// connection breaks, until Close. A first connection that fails is an
// error (ErrRefused when the hub said no).
func Dial(ctx context.Context, cfg Config) (*Conn, error) {
	urls, err := ParseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	if cfg.Name == "" {
		cfg.Name = "queen-bridge"
	}
	var id [12]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("leaf: server id: %w", err)
	}
	c := &Conn{
		cfg: cfg, urls: urls, id: "QBLEAF" + hex.EncodeToString(id[:]),
		log:  cfg.Logger.With().Str("target", "leaf").Logger(),
		kick: make(chan struct{}, 1),
		subs: newInterest(),
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	var s *session
	for _, u := range urls {
		if s, err = c.handshake(ctx, u); err == nil {
			break
		}
	}
	if err != nil {
		c.cancel()
		return nil, err
	}
	c.install(s)
	c.wg.Add(2)
	go c.run(s)
	go c.flusher()
	return c, nil
}

// Close flushes what Publish buffered, closes the connection and stops
// the Conn's goroutines, waiting for them. Idempotent.
func (c *Conn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	var err error
	if s := c.cur; s != nil {
		_ = s.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
		err = s.bw.Flush()
		c.cur = nil
		_ = s.nc.Close()
	}
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	if err != nil {
		return fmt.Errorf("leaf: flush on close: %w", err)
	}
	return nil
}

// install makes s the connection Publish writes to and its snapshot the
// interest; subjects that had interest before and have none in the
// snapshot are reported lost (a requester that went away while the
// connection was down).
func (c *Conn) install(s *session) {
	c.imu.Lock()
	old := c.subs
	c.subs, s.subs = s.subs, nil
	lost := c.subs.lostSince(old)
	c.imu.Unlock()
	c.pingsOut.Store(0)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		_ = s.nc.Close()
		return
	}
	c.cur = s
	c.mu.Unlock()
	c.fireLost(lost)
}

// drop ends s after an error: Publish sees ErrNotConnected until the
// reader has made a new connection. The first cause is kept for the log.
func (c *Conn) drop(s *session, cause error) {
	c.mu.Lock()
	c.dropLocked(s, cause)
	c.mu.Unlock()
}

func (c *Conn) dropLocked(s *session, cause error) {
	if c.cur == s {
		c.cur = nil
	}
	if s.cause == nil {
		s.cause = cause
	}
	_ = s.nc.Close() // wakes the reader of s, if it is not the caller
}

func (c *Conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// run owns the connection's life: it reads until the connection breaks,
// then connects again, until Close.
func (c *Conn) run(s *session) {
	defer c.wg.Done()
	for {
		c.drop(s, c.read(s))
		if c.isClosed() {
			return
		}
		c.mu.Lock()
		err := s.cause
		c.mu.Unlock()
		c.log.Warn().Err(err).Str("hub", redact(s.url.String())).Msg("leafnode connection lost; connecting again")
		if s = c.reconnect(); s == nil {
			return
		}
		c.install(s)
		c.log.Info().Str("hub", redact(s.url.String())).Msg("leafnode connection made again")
	}
}

// reconnect tries the URLs in turn, waiting longer between rounds, until
// one connects (nil when Close came first).
func (c *Conn) reconnect() *session {
	wait := backoffMin
	var lastErr string
	for {
		for _, u := range c.urls {
			s, err := c.handshake(c.ctx, u)
			if err == nil {
				return s
			}
			if c.ctx.Err() != nil {
				return nil
			}
			if err.Error() != lastErr { // one line per new reason, not per attempt
				lastErr = err.Error()
				c.log.Warn().Err(err).Str("hub", redact(u.String())).Msg("leafnode connection attempt failed; trying again")
			}
		}
		t := time.NewTimer(jitter(wait))
		select {
		case <-c.ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		wait = min(2*wait, backoffMax)
	}
}

// jitter spreads the reconnects of many bridges over [d/2, d).
func jitter(d time.Duration) time.Duration {
	var b [1]byte
	_, _ = rand.Read(b[:])
	return d/2 + time.Duration(int64(d/2)*int64(b[0])/256)
}

// read handles the hub's protocol lines on s until an error.
func (c *Conn) read(s *session) error {
	for {
		line, err := readLine(s.br)
		if err != nil {
			return err
		}
		o, err := parseOp(line)
		if err != nil {
			return err
		}
		switch o.kind {
		case opPing:
			c.mu.Lock()
			if c.cur == s {
				_ = s.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
				_, err = s.bw.WriteString("PONG\r\n")
				c.signal()
			}
			c.mu.Unlock()
			if err != nil {
				return fmt.Errorf("leaf: answer PING: %w", err)
			}
		case opPong:
			c.pingsOut.Store(0)
		case opSub:
			c.imu.Lock()
			c.subs.add(o.subject, o.queue, o.weight)
			c.imu.Unlock()
		case opUnsub:
			c.imu.Lock()
			gone := c.subs.remove(o.subject, o.queue)
			// A literal subject lost its interest when nothing else
			// matches it; a wildcard one when its last subscription went
			// (what it matched may still have interest: the receiver asks
			// Interested).
			lost := gone && (hasWildcard(o.subject) || !c.subs.matches(o.subject))
			c.imu.Unlock()
			if lost {
				c.fireLost([]string{o.subject})
			}
		case opErr:
			// The hub says why it will close the connection, or refuses
			// one message (a permission it lacks) and goes on.
			c.log.Warn().Str("hub", redact(s.url.String())).Str("error", string(o.arg)).Msg("the hub reports an error on the leafnode connection")
		case opMsg:
			if err := skipPayload(s.br, o.size); err != nil {
				return err
			}
		case opInfo, opOther:
		}
	}
}

func (c *Conn) fireLost(subjects []string) {
	fn := c.lost.Load()
	if fn == nil {
		return
	}
	for _, s := range subjects {
		(*fn)(s)
	}
}

// Interested reports whether some subscription in the hub's account
// matches the literal subject, as the hub last announced (kept across a
// reconnection until the new connection's announcements replace it).
func (c *Conn) Interested(subject string) bool {
	c.imu.RLock()
	defer c.imu.RUnlock()
	return c.subs.matches(subject)
}

// OnInterestLost sets fn, called when an LS- removes the last
// subscription matching a literal subject that had one, or after a
// reconnection for each subject that had interest and has none now. When
// the last subscription of a wildcard subject goes, fn is called with the
// wildcard subject: a literal subject it matched may have lost its
// interest with it (Match and Interested tell). fn runs on the reader
// goroutine and must not block; nil stops the calls.
func (c *Conn) OnInterestLost(fn func(subject string)) {
	if fn == nil {
		c.lost.Store(nil)
		return
	}
	c.lost.Store(&fn)
}
