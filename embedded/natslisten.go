package embedded

import (
	"fmt"
	"time"
)

// listenWatch is the embedded nats-server's logger while it starts: it
// keeps nothing but the first fatal message, which is how nats-server
// reports a listener it could not open ("Error listening on port: ...,
// address already in use") before it gives up on it. Without it the
// failure shows only as a server never ready, after the whole
// ReadyTimeout. nats-server calls the logger from its own goroutines: the
// buffered channel hands the message to the starting goroutine, the one
// reader, and a send that finds it full drops the later messages.
type listenWatch struct {
	fatal chan string
}

func newListenWatch() *listenWatch { return &listenWatch{fatal: make(chan string, 1)} }

func (w *listenWatch) Fatalf(format string, v ...any) {
	select {
	case w.fatal <- fmt.Sprintf(format, v...):
	default:
	}
}

// The other levels are dropped, as the server's own logging is (NoLog).
func (w *listenWatch) Noticef(string, ...any) {}
func (w *listenWatch) Warnf(string, ...any)   {}
func (w *listenWatch) Errorf(string, ...any)  {}
func (w *listenWatch) Debugf(string, ...any)  {}
func (w *listenWatch) Tracef(string, ...any)  {}

// ready waits until srv accepts clients, a fatal message comes, or timeout
// passes: readiness is polled in short steps so that a listener that
// failed ends the wait at once.
func (w *listenWatch) ready(srv interface{ ReadyForConnections(time.Duration) bool }, timeout time.Duration) (fatal string, ok bool) {
	const step = 50 * time.Millisecond
	deadline := time.Now().Add(timeout)
	for {
		select {
		case msg := <-w.fatal:
			return msg, false
		default:
		}
		left := time.Until(deadline)
		if left <= 0 {
			return "", false
		}
		if srv.ReadyForConnections(min(step, left)) {
			return "", true
		}
	}
}
