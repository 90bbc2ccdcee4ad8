package httpserve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"
)

// Server is one listener and the server on it; a nil *Server is one that
// was never started (Addr "", Shutdown nil).
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Listen listens on addr and serves h on a goroutine of its own until
// Shutdown. Reading a request (a body of up to the service's limit) and
// idling are bounded; writing is not, because a parked read holds its
// answer for up to its wait (handlers set their own write deadline).
func Listen(addr string, h http.Handler, log zerolog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Str("target", "bridge").Err(err).Str("addr", addr).Msg("http server stopped")
		}
	}()
	return &Server{srv: srv, ln: ln}, nil
}

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
	if err := s.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("http shutdown: %w", err)
	}
	return nil
}
