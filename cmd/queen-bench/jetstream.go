package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
	"github.com/queenbridge/queenbridge/embedded"
	"github.com/queenbridge/queenbridge/internal/proccpu"
)

// The jetstream target publishes with nats.go's jetstream.PublishAsync, as
// a JetStream producer does, to whatever answers on -nats: a queen-bridge
// with a stream over -subject (QUEEN_JETSTREAM=<stream>=<subject>.>), or a
// real JetStream stream (-create-stream makes it, file storage). Each of
// -clients publishers has its own connection and keeps up to -pending
// publishes waiting for their acks (PublishAsyncMaxPending); message k of
// publisher c goes to <subject>.p<n> for n = (c + k) % -partitions, with a
// unique Nats-Msg-Id. Items are acknowledged messages. CPU per item: the
// bridge's from -metrics (its process holds the embedded nats-server too),
// PostgreSQL's with -pg-dsn, and a JetStream server's with -server-pid.

// jsOptions are the jetstream target's own settings.
type jsOptions struct {
	stream    string // the name acks must carry
	subject   string // messages go to <subject>.p<n>
	window    int    // acks outstanding per publisher
	create    bool   // create the stream (a real JetStream server)
	serverPID int    // the JetStream server's process, for its CPU
}

// runJetStream loads a JetStream stream (or the bridge standing in for one)
// for o.duration and reports.
func runJetStream(ctx context.Context, o options, out io.Writer) (*result, error) {
	jo := o.js
	if o.clients < 1 || o.partitions < 1 || o.duration <= 0 || jo.window < 1 {
		return nil, fmt.Errorf("clients, partitions, window and duration must be at least 1")
	}
	if jo.create {
		if err := createStream(ctx, o); err != nil {
			return nil, err
		}
	}
	type publisher struct {
		nc *nats.Conn
		js js.JetStream
	}
	var acked, failed atomic.Int64
	var firstErr atomic.Value
	pubs := make([]publisher, o.clients)
	for c := range pubs {
		nc, err := nats.Connect(o.natsURL, nats.Name("queen-bench"))
		if err != nil {
			return nil, err
		}
		defer nc.Close()
		j, err := js.New(nc, js.WithPublishAsyncMaxPending(jo.window),
			js.WithPublishAsyncAckHandler(func(_ js.JetStream, _ *nats.Msg, ack *js.PubAck) {
				if ack.Stream == jo.stream {
					acked.Add(1)
				} else {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Errorf("ack from stream %q", ack.Stream))
				}
			}),
			js.WithPublishAsyncErrHandler(func(_ js.JetStream, _ *nats.Msg, err error) {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}))
		if err != nil {
			return nil, err
		}
		pubs[c] = publisher{nc, j}
	}
	subjects := make([]string, o.partitions)
	for p := range subjects {
		subjects[p] = jo.subject + ".p" + strconv.Itoa(p)
	}
	payload := payloadOf(o.payload)
	meter := newMeter(ctx, o, out)
	defer meter.close()
	loop, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	fmt.Fprintf(out, "\n%s, %s\n", describe(o), o.duration)
	startCPU := meter.sample()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range pubs {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			id := make([]byte, 0, 64)
			for k := 0; loop.Err() == nil; k++ {
				id = strconv.AppendInt(append(append(id[:0], o.run...), '-'), int64(c), 10)
				id = strconv.AppendInt(append(id, '-'), int64(k), 10)
				_, err := pubs[c].js.PublishAsync(subjects[(c+k)%o.partitions], payload, js.WithMsgID(string(id)), js.WithStallWait(time.Minute))
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
			select { // what is in flight at the deadline is answered and counted
			case <-pubs[c].js.PublishAsyncComplete():
			case <-ctx.Done():
			}
		}(c)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for last := int64(0); ; {
		select {
		case <-tick.C:
			n := acked.Load()
			fmt.Fprintf(out, "%5.0fs  %8d items/s  errors %d\n", time.Since(start).Seconds(), n-last, failed.Load())
			last = n
			continue
		case <-done:
		}
		break
	}
	elapsed := time.Since(start)
	r := &result{o: o, elapsed: elapsed, requests: acked.Load(), errs: failed.Load(), items: acked.Load(),
		statuses: map[string]int64{"acked": acked.Load()}}
	endCPU := meter.sample()
	r.cpu = endCPU.minus(startCPU).perItem(r.items)
	report(out, r)
	if err, _ := firstErr.Load().(error); err != nil {
		fmt.Fprintf(out, "first error: %v\n", err)
	}
	return r, nil
}

// createStream makes the stream on a JetStream server: file storage, the
// subjects under -subject, defaults otherwise (a two-minute duplicate
// window, the server's sync interval).
func createStream(ctx context.Context, o options) error {
	nc, err := nats.Connect(o.natsURL, nats.Name("queen-bench"))
	if err != nil {
		return err
	}
	defer nc.Close()
	j, err := js.New(nc)
	if err != nil {
		return err
	}
	cfg := js.StreamConfig{Name: o.js.stream, Subjects: []string{o.js.subject + ".>"}, Storage: js.FileStorage}
	if _, err := j.CreateOrUpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("create stream %s: %w", o.js.stream, err)
	}
	return nil
}

// serverCPU is the CPU time of -server-pid, NaN without one.
func serverCPU(pid int) float64 {
	if pid == 0 {
		return math.NaN()
	}
	d, err := proccpu.Process(pid)
	if err != nil {
		return math.NaN()
	}
	return d.Seconds()
}

// serveJetStream runs a nats-server with JetStream file storage in dir on
// listen until interrupted: the JetStream side of the comparison, in a
// process of its own so that its CPU is its own. syncAlways fsyncs every
// message before its ack (sync_interval: always).
func serveJetStream(dir, listen string, syncAlways bool, out io.Writer) error {
	ns, err := embedded.StartNATS(embedded.NATSConfig{Listen: listen, JetStreamDir: dir, SyncAlways: syncAlways})
	if err != nil {
		return err
	}
	defer ns.Stop()
	fmt.Fprintf(out, "jetstream %s pid %d store %s sync_always %v\n", ns.ClientURL(), os.Getpid(), dir, syncAlways)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil
	}
	return ctx.Err()
}
