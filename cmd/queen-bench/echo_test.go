package main

import (
	"bytes"
	"context"
	"net"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// The NATS floor answers a push as the bridge would count it: one status
// per item, after its delay, and stops with its context.
func TestServeEchoAnswersEveryItem(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	first, stop := startEcho(t, addr, 5*time.Millisecond)
	if !regexp.MustCompile(`^echo nats://\S+ pid \d+ subject queen\.v1\.push delay 5ms\n$`).MatchString(first) {
		t.Fatalf("first line %q", first)
	}
	ctx := context.Background()
	nc, err := nats.Connect("nats://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	tgt := &bridgeTarget{send: func(_ string, body []byte) ([]byte, error) {
		m, err := nc.Request("queen.v1.push", body, 5*time.Second)
		if err != nil {
			return nil, err
		}
		return m.Data, nil
	}}
	items := []item{{queue: "q", partition: "p0", txid: "a", payload: []byte(`{}`)}, {queue: "q", partition: "p1", txid: "b", payload: []byte(`{}`)},
		{queue: "q", partition: "p2", txid: "c", payload: []byte(`{}`)}}
	counts, err := tgt.push(ctx, 0, items)
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != 1 || counts["queued"] != 3 {
		t.Fatalf("counts %v, want 3 queued", counts)
	}
	if err := stop(); err != nil {
		t.Fatalf("serveEcho after cancel: %v", err)
	}
}

// startEcho runs serveEcho on listen until the test ends: it answers the
// floor's first line, and a stop that cancels it and answers its error.
func startEcho(t *testing.T, listen string, delay time.Duration) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		done <- serveEcho(ctx, listen, "queen", delay, &signalWriter{w: &out, ready: ready})
	}()
	select {
	case <-ready: // the first line is all the floor writes
	case err := <-done:
		cancel()
		t.Fatalf("serveEcho: %v", err)
	}
	var once sync.Once
	var stopErr error
	stop := func() error {
		once.Do(func() { cancel(); stopErr = <-done })
		return stopErr
	}
	t.Cleanup(func() { _ = stop() })
	return out.String(), stop
}

// signalWriter closes ready at the first write (serveEcho's ready line).
type signalWriter struct {
	w     *bytes.Buffer
	ready chan struct{}
}

func (s *signalWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if s.ready != nil {
		close(s.ready)
		s.ready = nil
	}
	return n, err
}
