package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"
)

// The JetStream consumer load (-js-consume MODES): -clients publishers
// (jspublishers.go: PublishAsync, -pending acks outstanding each) write
// -payload-byte JSON messages over -partitions subjects <subject>.<i>,
// each payload starting with its send time (on a timetable, its due
// time); -js-consumers Consume() consumers of one durable pull consumer
// (jsconsumers.go) acknowledge every message and time it from that stamp.
// Each mode runs on each of -js-targets: the bridge at -nats (its stream
// -stream over <subject>.>, QUEEN_JETSTREAM), and real JetStream
// file-storage streams on nats-servers this run starts in processes of
// their own (jsservers.go), with sync_interval: always and with the
// default sync. The modes:
//
//	push   publishers saturating for -duration, no consumer
//	drain  a durable is made, publishers saturating write a backlog
//	       (-backlog messages, or for -duration), then the consumers drain
//	       it, timed from their first pull: consumed/s and CPU per consumed
//	       message beside the backlog's CPU per pushed message
//	both   publishers saturating and the consumers at once, for -duration
//	paced  the same with the publishers on a timetable at -rate msgs/s,
//	       or -pace × the push mode's msgs/s on the same target in this run
//	lone   one publisher on a timetable at -lone-rate msgs/s, one consumer
//
// A mode's durable is <durable>-<run>-<mode>, DeliverPolicy new, made
// before anything is published and deleted afterwards: it reads exactly the
// mode's own messages, even from a bridge's stream, which the run cannot
// make anew and which holds earlier runs' messages. A real server's stream
// is made anew for every mode.

// jscOptions are the JetStream consumer load's own settings.
type jscOptions struct {
	modes         string // comma list of push, drain, both, paced, lone, or all ("": the load is off)
	targets       string // comma list of bridge, always, default
	consumers     int
	durable       string // the durables' name prefix
	doubleAck     bool
	backlog       int64         // drain: messages published first (0: for -duration)
	pace          float64       // paced without -rate: share of the push mode's msgs/s
	loneRate      float64       // lone: msgs/s
	pullMax       int           // Consume's PullMaxMessages (0: nats.go's default)
	maxAckPending int           // the durable's max_ack_pending (0: the server's default)
	stall         time.Duration // give up when consumers receive nothing this long while messages wait
}

var (
	jsModes   = []string{"push", "drain", "both", "paced", "lone"}
	jsTargets = []string{"bridge", "always", "default"}
)

// jsList splits a comma list and refuses a name not in known.
func jsList(flag, list string, known []string) ([]string, error) {
	if list == "all" {
		return known, nil
	}
	var out []string
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("%s: %q is not one of %s", flag, name, strings.Join(known, ", "))
		}
		out = append(out, name)
	}
	return out, nil
}

// checkJSConsume refuses what the load cannot run.
func checkJSConsume(o options) (modes, targets []string, err error) {
	if modes, err = jsList("-js-consume", o.jsc.modes, jsModes); err != nil {
		return nil, nil, err
	}
	if targets, err = jsList("-js-targets", o.jsc.targets, jsTargets); err != nil {
		return nil, nil, err
	}
	jo := o.jsc
	switch {
	case o.clients < 1 || jo.consumers < 1 || o.partitions < 1 || o.duration <= 0 || o.js.window < 1:
		return nil, nil, fmt.Errorf("-clients, -js-consumers, -partitions, -pending and -duration must be at least 1")
	case jo.backlog < 0 || jo.pace <= 0 || jo.loneRate <= 0 || jo.stall <= 0 || jo.pullMax < 0 || jo.maxAckPending < 0:
		return nil, nil, fmt.Errorf("-backlog, -pull-max and -max-ack-pending must not be negative; -pace, -lone-rate and -stall must be positive")
	case strings.ContainsAny(jo.durable+o.run, ". *>") || jo.durable == "":
		return nil, nil, fmt.Errorf("-durable and -run name a consumer: no '.', '*', '>' or space, got %q and %q", jo.durable, o.run)
	}
	return modes, targets, nil
}

// jsResult is one mode on one target.
type jsResult struct {
	target, mode          string
	stream                string // the stream the load published to
	publishers, consumers int
	asked                 float64       // paced, lone: msgs/s on the timetable
	pushed                int64         // acknowledged by the stream
	pushTime              time.Duration // the publishing, to the last ack
	pushCPU               cpuSplit      // drain: per message of the backlog
	consumed              int64         // drain: all of the backlog; others: first deliveries by the end of the publishing
	consumeTime           time.Duration // drain: from the first pull to the last first delivery; others: pushTime
	cpu                   cpuSplit      // push: per pushed; drain: per consumed; others: per pushed + consumed
	serverOf              func(cpuSplit) float64
	lat                   []time.Duration  // sorted
	toStored, fromStored  []time.Duration  // sorted: lat split at each delivery's stored timestamp
	again                 int64            // deliveries after the first
	seen, acks            int64            // messages delivered once or more, and acknowledgements sent, by the end of the mode
	durable               *js.ConsumerInfo // the durable's own account at the end (nil: none, or the target did not say)
	errs                  int64
	firstErr              error
}

func (r *jsResult) pushRate() float64 { return float64(r.pushed) / max(r.pushTime.Seconds(), 1e-9) }
func (r *jsResult) consumeRate() float64 {
	return float64(r.consumed) / max(r.consumeTime.Seconds(), 1e-9)
}

// runJSConsume runs every mode on every target and prints the table.
func runJSConsume(ctx context.Context, o options, out io.Writer) error {
	modes, names, err := checkJSConsume(o)
	if err != nil {
		return err
	}
	var results []*jsResult
	var failures []string
	for _, name := range names {
		tg, err := startJSTarget(name, o, out)
		if err != nil {
			return err
		}
		rs, fails := runJSModes(ctx, o, tg, modes, out)
		tg.stop()
		results, failures = append(results, rs...), append(failures, fails...)
	}
	jsTable(out, o, results)
	if len(failures) > 0 {
		return fmt.Errorf("%d of %d runs failed: %s", len(failures), len(modes)*len(names), strings.Join(failures, "; "))
	}
	return nil
}

// runJSModes runs the modes in order on one target; a failed mode is
// reported and the next one runs.
func runJSModes(ctx context.Context, o options, tg jsTarget, modes []string, out io.Writer) (results []*jsResult, failures []string) {
	pushRate := 0.0
	for _, mode := range modes {
		r, err := runJSMode(ctx, o, tg, mode, pushRate, out)
		if err != nil {
			fmt.Fprintf(out, "%s %s failed: %v\n", tg.name, mode, err)
			failures = append(failures, fmt.Sprintf("%s %s: %v", tg.name, mode, err))
			if ctx.Err() != nil {
				return results, failures
			}
			continue
		}
		if mode == "push" {
			pushRate = r.pushRate()
		}
		results = append(results, r)
	}
	return results, failures
}

// apiErr explains an error of the JetStream API at url: "no responders"
// there means nothing serves the API (a bridge without JetStream
// consumers, or a server without JetStream).
func apiErr(url string, err error) error {
	if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, js.ErrJetStreamNotEnabled) {
		return fmt.Errorf("nothing at %s answers the JetStream API (no responders): it serves no JetStream consumers: %w", url, err)
	}
	return err
}

// runJSMode runs one mode on one target. pushRate is the push mode's
// msgs/s on this target in this run (0: not measured).
func runJSMode(ctx context.Context, o options, tg jsTarget, mode string, pushRate float64, out io.Writer) (*jsResult, error) {
	jo := o.jsc
	r := &jsResult{target: tg.name, mode: mode, publishers: o.clients, consumers: jo.consumers, serverOf: tg.serverOf}
	switch mode {
	case "push":
		r.consumers = 0
	case "paced":
		if r.asked = o.rate; r.asked == 0 {
			r.asked = jo.pace * pushRate
		}
		if r.asked <= 0 {
			return nil, fmt.Errorf("paced needs -rate, or the push mode before it in -js-consume (paced then runs at -pace × its msgs/s)")
		}
	case "lone":
		r.publishers, r.consumers, r.asked = 1, 1, jo.loneRate
	}
	api, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	admin, err := nats.Connect(tg.url, nats.Name("queen-bench-admin"))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", tg.url, err)
	}
	defer admin.Close()
	j, err := js.New(admin)
	if err != nil {
		return nil, err
	}
	r.stream = o.js.stream
	if tg.fresh {
		if r.stream, err = freshStream(api, j, o); err != nil {
			return nil, err
		}
	}
	var durable js.Consumer
	var stream js.Stream
	name := jo.durable + "-" + o.run + "-" + mode
	if r.consumers > 0 {
		if stream, err = j.Stream(api, r.stream); err != nil {
			return nil, fmt.Errorf("stream %s: %w", r.stream, apiErr(tg.url, err))
		}
		durable, err = stream.CreateConsumer(api, js.ConsumerConfig{Durable: name, AckPolicy: js.AckExplicitPolicy,
			DeliverPolicy: js.DeliverNewPolicy, MaxAckPending: jo.maxAckPending})
		if err != nil {
			return nil, fmt.Errorf("create durable %s on stream %s: %w", name, r.stream, apiErr(tg.url, err))
		}
		defer func() {
			del, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := stream.DeleteConsumer(del, name); err != nil {
				fmt.Fprintf(out, "note: durable %s not deleted: %v\n", name, err)
			}
		}()
	}
	pubs, err := newJSPublishers(tg.url, r.publishers, o.js.window, r.stream, jsSubjects(o.js.subject, o.partitions), o.payload,
		o.run+"-"+tg.name+"-"+mode+"-", jo.stall)
	if err != nil {
		return nil, err
	}
	defer pubs.close()
	var cons *jsConsumers
	var handles []js.Consumer
	if r.consumers > 0 {
		if cons, handles, err = newJSConsumers(api, tg.url, r.stream, name, r.consumers, jo.doubleAck); err != nil {
			return nil, err
		}
		defer cons.close()
	}
	meter := newMeter(ctx, tg.meterOf, out)
	defer meter.close()
	fmt.Fprintf(out, "\n%s %s: %s\n", tg.name, mode, jsDescribe(o, r))
	ph := &jsPhase{ctx: ctx, o: o, pubs: pubs, cons: cons, meter: meter, out: out}
	switch mode {
	case "push":
		ph.publish(r)
		r.cpu = r.pushCPU
	case "drain":
		if jo.backlog > 0 {
			pubs.stopAfterLimit = jo.backlog
		}
		ph.publish(r)
		cons.timing.Store(false)
		if err := ph.drain(r, handles); err != nil {
			return nil, err
		}
	default:
		if err := ph.live(r, handles); err != nil {
			return nil, err
		}
	}
	r.errs = pubs.failed.Load()
	r.firstErr = pubs.err()
	if cons != nil {
		cons.stop()
		r.errs += cons.failed.Load()
		if r.firstErr == nil {
			r.firstErr = cons.err()
		}
		r.seen, r.again = cons.seen.counts()
		r.acks = cons.acked.Load()
		r.lat, r.toStored, r.fromStored = cons.latencies()
		for _, l := range [][]time.Duration{r.lat, r.toStored, r.fromStored} {
			slices.Sort(l)
		}
	}
	jsReport(out, r, ph.late)
	if durable != nil {
		r.durable = jsDurableLine(ctx, out, durable)
	}
	return r, nil
}

// freshStream makes a new stream for the load on a server of this run's
// own and returns its name, <stream>_<n> with n counting up in the process:
// file storage, subjects <subject>.>, defaults otherwise (the server's sync
// interval, a two-minute duplicate window). The load's earlier streams
// (<stream> and <stream>_*), whose subjects it takes over, are deleted
// first. A new name each time: nats-server deletes a file-storage stream
// by renaming its directory to ".<name>" and removing that in the
// background, and a stream deleted and made again under the same name
// soon after may find that still going ("error creating store for
// stream").
//
// The stream <stream>-HOLD (no messages; a subject the load never uses)
// stays for the server's life. Deleting a stream also starts a removal of
// the account's streams directory, a no-op unless it is empty: with the
// load's last stream gone it is, and a removal that lands between the
// new stream's making of that directory and of its own fails the create
// ("could not create storage directory ... no such file or directory").
// The held stream keeps the directory from ever being empty.
func freshStream(ctx context.Context, j js.JetStream, o options) (string, error) {
	hold := js.StreamConfig{Name: o.js.stream + "-HOLD", Subjects: []string{o.js.subject + "-hold"}, Storage: js.FileStorage}
	if _, err := j.CreateStream(ctx, hold); err != nil {
		return "", fmt.Errorf("create stream %s: %w", hold.Name, err)
	}
	names := j.StreamNames(ctx)
	var old []string
	for n := range names.Name() {
		if n == o.js.stream || strings.HasPrefix(n, o.js.stream+"_") {
			old = append(old, n)
		}
	}
	if err := names.Err(); err != nil {
		return "", fmt.Errorf("list streams: %w", err)
	}
	for _, n := range old {
		if err := j.DeleteStream(ctx, n); err != nil && !errors.Is(err, js.ErrStreamNotFound) {
			return "", fmt.Errorf("delete stream %s: %w", n, err)
		}
	}
	name := fmt.Sprintf("%s_%d", o.js.stream, freshStreams.Add(1))
	cfg := js.StreamConfig{Name: name, Subjects: []string{o.js.subject + ".>"}, Storage: js.FileStorage}
	if _, err := j.CreateStream(ctx, cfg); err != nil {
		return "", fmt.Errorf("create stream %s: %w", name, err)
	}
	return name, nil
}

// freshStreams numbers the streams freshStream makes.
var freshStreams atomic.Int64

// jsDescribe is a mode's load, for its heading.
func jsDescribe(o options, r *jsResult) string {
	pubs := plural(r.publishers, "publisher")
	pub := fmt.Sprintf("%s saturating (%d pending each)", pubs, o.js.window)
	if r.asked > 0 {
		pub = fmt.Sprintf("%s on a timetable at %.0f msgs/s", pubs, r.asked)
	}
	if r.mode == "drain" && o.jsc.backlog > 0 {
		pub = fmt.Sprintf("%s write a backlog of %d", pubs, o.jsc.backlog)
	}
	ack := "Ack"
	if o.jsc.doubleAck {
		ack = "DoubleAck"
	}
	cons := "no consumer"
	if r.consumers > 0 {
		cons = fmt.Sprintf("%s of one durable (%s)", plural(r.consumers, "Consume() consumer"), ack)
	}
	return fmt.Sprintf("%s, %s; stream %s, %d-byte payloads over %s.0..%d, %s", pub, cons, r.stream, o.payload, o.js.subject,
		o.partitions-1, o.duration)
}

// plural is "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
