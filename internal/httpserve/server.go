package httpserve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// The service's bounds on reading a request and on idle connections.
const (
	ReadHeaderTimeout = 10 * time.Second
	ReadTimeout       = 2 * time.Minute
	IdleTimeout       = 2 * time.Minute
)

// Server is one listener and the server on it; a nil *Server is one that
// was never started (Addr "", Shutdown nil).
type Server struct {
	srv *http.Server
	ln  net.Listener

	// With lean routes: the connections of ln are served by the lean loop
	// first (lean.go), and handed to srv through handoff.
	lean      []LeanRoute
	leanLines []string // each route's request line
	handoff   *handoff
	log       zerolog.Logger
	ctx       context.Context // the lean routes' requests'; cancelled when stopped
	cancel    context.CancelFunc
	serving   sync.WaitGroup // the accept loop

	// mu guards conns: the lean connections' goroutines register and go
	// idle, Shutdown closes the idle ones and waits for the rest. down is
	// set under mu (so that no connection goes idle unseen after it) and
	// read without it on every request.
	mu    sync.Mutex
	conns map[*leanConn]struct{}
	down  atomic.Bool
}

// Listen listens on addr and serves h on a goroutine of its own until
// Shutdown; requests of the lean routes are served by the listener itself
// (LeanRoute). Reading a request (a body of up to the service's limit) and
// idling are bounded; writing is not, because a parked read holds its
// answer for up to its wait (handlers set their own write deadline).
func Listen(addr string, h http.Handler, log zerolog.Logger, lean ...LeanRoute) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http listen %s: %w", addr, err)
	}
	s := &Server{ln: ln, lean: lean, conns: map[*leanConn]struct{}{}, log: log,
		srv: &http.Server{Handler: h, ReadHeaderTimeout: ReadHeaderTimeout, ReadTimeout: ReadTimeout, IdleTimeout: IdleTimeout}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	serve := func(l net.Listener) {
		if err := s.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Str("target", "bridge").Err(err).Str("addr", addr).Msg("http server stopped")
		}
	}
	if len(lean) == 0 {
		go serve(ln)
		return s, nil
	}
	for _, rt := range lean {
		s.leanLines = append(s.leanLines, rt.Method+" "+rt.Path+" HTTP/1.1\r\n")
	}
	s.handoff = &handoff{conns: make(chan net.Conn), done: make(chan struct{}), addr: ln.Addr()}
	go serve(s.handoff)
	s.serving.Add(1)
	go s.accept(log)
	return s, nil
}

// accept starts the lean loop of each connection until the listener closes.
func (s *Server) accept(log zerolog.Logger) {
	defer s.serving.Done()
	var backoff time.Duration
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if s.stopping() || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: wait, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			log.Error().Str("target", "bridge").Err(err).Dur("retry", backoff).Msg("http accept")
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		lc := &leanConn{s: s, c: c, buf: make([]byte, 4<<10)}
		s.mu.Lock()
		if s.down.Load() {
			s.mu.Unlock()
			_ = c.Close()
			continue
		}
		s.conns[lc] = struct{}{}
		s.mu.Unlock()
		go lc.serve()
	}
}

// setIdle marks lc waiting for a request (or no longer); it reports false
// once the server is stopping and lc is to close instead of waiting.
func (s *Server) setIdle(lc *leanConn, idle bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.conns[lc]; !ok || (idle && s.down.Load()) {
		return false
	}
	lc.idle = idle
	return true
}

func (s *Server) forget(lc *leanConn) {
	s.mu.Lock()
	delete(s.conns, lc)
	s.mu.Unlock()
}

func (s *Server) stopping() bool { return s.down.Load() }

// Addr is the address it listens on.
func (s *Server) Addr() string {
	if s == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Shutdown stops listening and waits, within ctx, for the requests in
// progress to end.
func (s *Server) Shutdown(ctx context.Context) error {
	if s == nil {
		return nil
	}
	defer s.cancel()
	herr := make(chan error, 1)
	go func() { herr <- s.srv.Shutdown(ctx) }()
	err := s.shutdownLean(ctx)
	if e := <-herr; e != nil {
		err = e
	}
	if err != nil {
		return fmt.Errorf("http shutdown: %w", err)
	}
	return nil
}

// shutdownLean closes the listener and the lean connections waiting for a
// request's head (idle), and waits, within ctx, for the others to answer
// the request they serve (they close after it); past ctx it closes them.
func (s *Server) shutdownLean(ctx context.Context) error {
	if s.handoff == nil {
		return nil
	}
	s.mu.Lock()
	s.down.Store(true)
	s.mu.Unlock()
	_ = s.ln.Close()
	s.serving.Wait()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		s.mu.Lock()
		for lc := range s.conns {
			if lc.idle || ctx.Err() != nil {
				delete(s.conns, lc)
				_ = lc.c.Close()
			}
		}
		left := len(s.conns)
		s.mu.Unlock()
		if left == 0 {
			return ctx.Err()
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// handoff is the listener net/http serves the handed-over connections of
// from.
type handoff struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	addr  net.Addr
}

func (l *handoff) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoff) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *handoff) Addr() net.Addr { return l.addr }

// give hands c to net/http, or closes it when the server has stopped.
func (l *handoff) give(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		_ = c.Close()
	}
}

// replayConn reads pending, the bytes the lean loop read and did not
// serve, before the connection's own.
type replayConn struct {
	net.Conn
	pending []byte
}

// CloseWrite is the connection's own: net/http closes the sending side
// first when it closes a connection after an answer.
func (c *replayConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
