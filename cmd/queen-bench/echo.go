package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/queenbridge/queenbridge/embedded"
)

// The NATS floor (-serve-echo): what a request over NATS costs a Go service
// that embeds its nats-server, as the bridge does, before any work of its
// own. It runs the embedded server, connects to it in-process, and answers
// <prefix>.v1.push with a micro endpoint that says "queued" for every item
// after -echo-delay (a timer, where the bridge waits for PostgreSQL's
// commit), in a process of its own whose CPU -server-pid reads:
//
//	queen-bench -serve-echo 127.0.0.1:4333 -echo-delay 1ms &
//	queen-bench -nats nats://127.0.0.1:4333 -server-pid PID -metrics none -clients 1
//
// The difference between the bridge's CPU per request and this process's,
// at the same request rate, is what the bridge's own code costs.
//
// The HTTP floor (-serve-echo http://ADDR) is the same over HTTP/1.1: the
// bridge's own listener and lean connection loop with a push route that
// answers after -echo-delay (serveEchoHTTP, echohttp.go). Loaded with
// -transport http, its CPU per request beside the NATS floor's at the same
// load is what the transport itself costs.

// echoFor is the answer to a push body: one status per item (each item
// opens with {"queue":, as queen-bench writes them).
func echoFor(body []byte) []byte {
	return echoAnswer(bytes.Count(body, []byte(`{"queue":`)))
}

// echoAnswer is the answer for n items: a push answer's statuses, nothing else.
func echoAnswer(n int) []byte {
	b := make([]byte, 0, 2+n*20)
	b = append(b, '[')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"status":"queued"}`...)
	}
	return append(b, ']')
}

// serveEcho runs the floor until interrupted. A listen address that is a
// nats:// URL is a server of its own to connect to instead (the floor of a
// bridge that does not embed NATS; the server's CPU is then not counted).
func serveEcho(ctx context.Context, listen, prefix string, delay time.Duration, out io.Writer) error {
	if addr, ok := strings.CutPrefix(listen, "http://"); ok {
		return serveEchoHTTP(ctx, addr, delay, out)
	}
	url, opts := listen, []nats.Option(nil)
	if !strings.HasPrefix(listen, "nats://") {
		ns, err := embedded.StartNATS(embedded.NATSConfig{Listen: listen})
		if err != nil {
			return err
		}
		defer ns.Stop()
		url, opts = ns.ClientURL(), []nats.Option{nats.InProcessServer(ns.Server())}
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return err
	}
	defer nc.Close()
	svc, err := micro.AddService(nc, micro.Config{Name: "queen-bench-echo", Version: "0.1.0", QueueGroup: "queen-bench-echo"})
	if err != nil {
		return err
	}
	defer func() { _ = svc.Stop() }()
	err = svc.AddEndpoint("push", micro.HandlerFunc(func(req micro.Request) {
		answer := echoFor(req.Data())
		if delay <= 0 {
			_ = req.Respond(answer)
			return
		}
		time.AfterFunc(delay, func() { _ = req.Respond(answer) })
	}), micro.WithEndpointSubject(prefix+".v1.push"))
	if err != nil {
		return err
	}
	// The endpoint's subscription is sent to the server asynchronously: the
	// ready line is written only once the server has it, so a request sent
	// after the line finds a responder.
	if err := nc.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "echo %s pid %d subject %s.v1.push delay %s\n", url, os.Getpid(), prefix, delay)
	<-ctx.Done()
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil
	}
	return ctx.Err()
}
