package httpserve_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/httpserve"
	"github.com/rs/zerolog"
)

// client makes a fresh connection per request, so that a request after
// Shutdown cannot ride on a connection kept from before.
func client() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Minute}
}

func get(c *http.Client, addr string) (string, error) {
	res, err := c.Get("http://" + addr + "/hello")
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.Status + " " + string(b), err
}

func TestListenServesUntilShutdown(t *testing.T) {
	t.Parallel()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "hi "+r.URL.Path) })
	s, err := httpserve.Listen("127.0.0.1:0", h, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	addr := s.Addr()
	if !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":0") {
		t.Fatalf("Addr %q", addr)
	}
	c := client()
	if got, err := get(c, addr); err != nil || got != "200 OK hi /hello" {
		t.Fatalf("%q, %v", got, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := get(c, addr); err == nil {
		t.Errorf("served %q after Shutdown", got)
	}
}

// Shutdown waits for a request in progress, and gives up with its context.
func TestShutdownWaitsForRequestsInProgress(t *testing.T) {
	t.Parallel()
	for _, giveUp := range []bool{false, true} {
		entered, release := make(chan struct{}), make(chan struct{})
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(entered)
			<-release
			_, _ = io.WriteString(w, "done")
		})
		s, err := httpserve.Listen("127.0.0.1:0", h, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		answered := make(chan string, 1)
		go func() {
			got, err := get(client(), s.Addr())
			if err != nil {
				got = err.Error()
			}
			answered <- got
		}()
		<-entered
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if giveUp {
			cancel()
		}
		stopped := make(chan error, 1)
		go func() { stopped <- s.Shutdown(ctx) }()
		if giveUp {
			if err := <-stopped; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "http shutdown") {
				t.Errorf("Shutdown with its context done: %v", err)
			}
			close(release)
		} else {
			select {
			case err := <-stopped:
				t.Fatalf("Shutdown returned while a request was in progress: %v", err)
			default:
			}
			close(release)
			if err := <-stopped; err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		}
		if got := <-answered; got != "200 OK done" {
			t.Errorf("giving up %v: the request in progress got %q", giveUp, got)
		}
		cancel()
	}
}

func TestListenOnABusyAddress(t *testing.T) {
	t.Parallel()
	s, err := httpserve.Listen("127.0.0.1:0", http.NotFoundHandler(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	if s2, err := httpserve.Listen(s.Addr(), http.NotFoundHandler(), zerolog.Nop()); err == nil || s2 != nil ||
		!strings.Contains(err.Error(), "http listen "+s.Addr()) {
		t.Errorf("second Listen on %s: %v, %v", s.Addr(), s2, err)
	}
}

func TestANilServerWasNeverStarted(t *testing.T) {
	t.Parallel()
	var s *httpserve.Server
	if s.Addr() != "" {
		t.Errorf("Addr %q", s.Addr())
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}
