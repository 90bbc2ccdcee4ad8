package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/embedded"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// jsLoadOptions is a short JetStream consumer load.
func jsLoadOptions() options {
	return options{clients: 3, partitions: 7, payload: 200, duration: 600 * time.Millisecond, run: "t",
		js:  jsOptions{stream: "BENCH", subject: "bench.js", window: 32},
		jsc: jscOptions{consumers: 3, durable: "bench", pace: 0.25, loneRate: 50, stall: time.Minute}}
}

// Every mode of the JetStream consumer load against a real JetStream
// file-storage stream: the stream holds exactly what the publishers count
// as acknowledged, and in the modes with consumers every one of those
// messages was received and acknowledged once: the load saw each message
// number once, sent one ack a delivery, and the durable itself reports
// everything acknowledged and nothing redelivered.
func TestJSConsumeLoadReceivesAndAcksEveryMessageOnce(t *testing.T) {
	ns, logs := jsTestServer(t)
	tg := jsServerTarget("default", ns.ClientURL(), 0, func() {})
	_, j := testkit.JetStream(t, ns.ClientURL())
	ctx := context.Background()
	for _, c := range []struct {
		mode      string
		rate      float64
		doubleAck bool
		backlog   int64
	}{{mode: "push"}, {mode: "drain"}, {mode: "drain", backlog: 500, doubleAck: true}, {mode: "both"}, {mode: "paced", rate: 400},
		{mode: "lone"}} {
		o := jsLoadOptions()
		o.rate, o.jsc.doubleAck, o.jsc.backlog = c.rate, c.doubleAck, c.backlog
		var out strings.Builder
		r, err := runJSMode(ctx, o, tg, c.mode, 0, &out)
		if err != nil {
			t.Fatalf("%s: %v\n%s\nserver log:\n%s", c.mode, err, out.String(), logs)
		}
		report := out.String()
		if r.pushed == 0 || r.errs != 0 {
			t.Fatalf("%s: %d pushed, %d errors (%v):\n%s", c.mode, r.pushed, r.errs, r.firstErr, report)
		}
		s, err := j.Stream(ctx, r.stream)
		if err != nil {
			t.Fatal(err)
		}
		if st := s.CachedInfo().State; st.Msgs != uint64(r.pushed) || st.LastSeq != uint64(r.pushed) {
			t.Fatalf("%s: the stream holds %d messages to seq %d; %d were acknowledged:\n%s", c.mode, st.Msgs, st.LastSeq, r.pushed, report)
		}
		if c.mode == "push" {
			if r.consumers != 0 || r.seen != 0 || r.durable != nil {
				t.Fatalf("push: consumers ran:\n%s", report)
			}
			continue
		}
		if r.seen != r.pushed || r.again != 0 || r.acks != r.pushed {
			t.Fatalf("%s: %d of %d messages seen, %d again, %d acks sent:\n%s", c.mode, r.seen, r.pushed, r.again, r.acks, report)
		}
		d := r.durable
		if d == nil || d.AckFloor.Stream != uint64(r.pushed) || d.NumAckPending != 0 || d.NumRedelivered != 0 || d.NumPending != 0 {
			t.Fatalf("%s: the durable's account %+v after %d messages:\n%s", c.mode, d, r.pushed, report)
		}
		if c.backlog > 0 && r.pushed != c.backlog {
			t.Fatalf("drain: a backlog of %d, %d pushed", c.backlog, r.pushed)
		}
		if (c.mode == "lone") != (r.publishers == 1 && r.consumers == 1) {
			t.Fatalf("%s: %d publishers, %d consumers", c.mode, r.publishers, r.consumers)
		}
		timed := c.mode != "drain"
		if timed != (len(r.lat) == int(r.pushed)) || timed != strings.Contains(report, "publish-to-receive p50") {
			t.Fatalf("%s: %d latencies of %d messages:\n%s", c.mode, len(r.lat), r.pushed, report)
		}
		// Every timed delivery carries its stored timestamp, which splits
		// its latency in two.
		if len(r.toStored) != len(r.lat) || len(r.fromStored) != len(r.lat) || timed != strings.Contains(report, "publish to stored p50") {
			t.Fatalf("%s: %d and %d split latencies of %d:\n%s", c.mode, len(r.toStored), len(r.fromStored), len(r.lat), report)
		}
		// No durable is left behind.
		names := s.ConsumerNames(ctx)
		for name := range names.Name() {
			t.Fatalf("%s: durable %s left on the stream", c.mode, name)
		}
		if err := names.Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// A target that does not answer the JetStream API (a bridge without
// JetStream consumers, here a server without JetStream) fails each
// consumer mode at once with an error that says so; one that takes
// publishes and never acknowledges them ends the push mode after -stall.
func TestJSConsumeFailsClearlyWithoutTheJetStreamAPI(t *testing.T) {
	ns, err := embedded.StartNATS(embedded.NATSConfig{Listen: "127.0.0.1:-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Stop()
	o := jsLoadOptions()
	tg := jsTarget{name: "bridge", url: ns.ClientURL(), meterOf: options{target: "jetstream"}, serverOf: func(s cpuSplit) float64 { return s.bridge },
		stop: func() {}}
	var out strings.Builder
	results, failures := runJSModes(context.Background(), o, tg, []string{"drain", "both", "lone"}, &out)
	if len(results) != 0 || len(failures) != 3 {
		t.Fatalf("%d results, failures %q", len(results), failures)
	}
	for _, f := range failures {
		if !strings.Contains(f, "answers the JetStream API (no responders)") || !strings.Contains(f, "stream BENCH") {
			t.Fatalf("failure %q does not say that nothing answers the JetStream API", f)
		}
	}

	// A target that takes the publishes and never acknowledges them: the
	// push mode ends after -stall with every publish counted as failed.
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Subscribe("bench.js.>", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	o.jsc.stall, o.duration = 300*time.Millisecond, 200*time.Millisecond
	r, err := runJSMode(context.Background(), o, tg, "push", 0, &out)
	if err != nil {
		t.Fatal(err)
	}
	if r.pushed != 0 || r.errs == 0 || !strings.Contains(fmt.Sprint(r.firstErr), "a publish unanswered for 300ms") {
		t.Fatalf("unanswered publishes: %d pushed, %d errors, the first %v", r.pushed, r.errs, r.firstErr)
	}
}

// The options the load cannot run are refused, naming what was wrong.
func TestJSConsumeRefusesBadOptions(t *testing.T) {
	t.Parallel()
	ok := jsLoadOptions()
	ok.jsc.modes, ok.jsc.targets = "all", "bridge,always"
	if modes, targets, err := checkJSConsume(ok); err != nil || len(modes) != 5 || len(targets) != 2 {
		t.Fatalf("all modes on two targets: %v %v %v", modes, targets, err)
	}
	for name, c := range map[string]struct {
		change func(*options)
		want   string
	}{
		"an unknown mode":       {func(o *options) { o.jsc.modes = "push,pull" }, `-js-consume: "pull"`},
		"an unknown target":     {func(o *options) { o.jsc.targets = "bridge,kafka" }, `-js-targets: "kafka"`},
		"no consumers":          {func(o *options) { o.jsc.consumers = 0 }, "-js-consumers"},
		"a negative backlog":    {func(o *options) { o.jsc.backlog = -1 }, "-backlog"},
		"a zero pace":           {func(o *options) { o.jsc.pace = 0 }, "-pace"},
		"a durable with a dot":  {func(o *options) { o.jsc.durable = "a.b" }, "-durable"},
		"a zero pending window": {func(o *options) { o.js.window = 0 }, "-pending"},
	} {
		o := ok
		c.change(&o)
		if _, _, err := checkJSConsume(o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %s", name, err, c.want)
		}
	}
	// benchMain runs the load when -js-consume is set, and refuses it there.
	if err := benchMain(context.Background(), options{jsc: jscOptions{modes: "drain,pull"}}, &strings.Builder{}); err == nil ||
		!strings.Contains(err.Error(), `-js-consume: "pull"`) {
		t.Fatalf("benchMain with an unknown mode: %v", err)
	}
	// paced with neither -rate nor a push mode before it has no rate.
	o := ok
	_, err := runJSMode(context.Background(), o, jsTarget{name: "bridge", url: "nats://127.0.0.1:1"}, "paced", 0, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "-rate") {
		t.Fatalf("paced without a rate: %v", err)
	}
}

// stamp writes payloads of the asked size with the send time first, and
// unstamp reads back exactly the time and number; anything else is no stamp.
func TestStampRoundTrips(t *testing.T) {
	t.Parallel()
	at := time.Unix(1_796_544_126, 598_456_591)
	for _, n := range []int64{0, 7, 1_234_567_890} {
		b := stamp(nil, at, n, 200)
		if len(b) != 200 || !strings.HasPrefix(string(b), `{"t":1796544126598456591,`) {
			t.Fatalf("%d: %d bytes %q", n, len(b), b)
		}
		got, gotN, ok := unstamp(b)
		if !ok || !got.Equal(at) || gotN != n {
			t.Fatalf("%d: read back %s, %d, %v", n, got, gotN, ok)
		}
	}
	for _, bad := range []string{``, `{"data":"x"}`, `{"t":,"n":1,"d":""}`, `{"t":12,"x":1,"d":""}`, `{"t":12,"n":1}`,
		`{"t":99999999999999999999,"n":1,"d":""}`} {
		if _, _, ok := unstamp([]byte(bad)); ok {
			t.Errorf("%q read as a stamp", bad)
		}
	}
}

// The ready line of a JetStream server this binary serves gives its URL.
func TestReadyLineFindsTheServersURL(t *testing.T) {
	t.Parallel()
	url, ok := readyLine([]byte("note: something\njetstream nats://127.0.0.1:41681 pid 3 store /tmp/x sync_always true\n"))
	if !ok || url != "nats://127.0.0.1:41681" {
		t.Fatalf("%q %v", url, ok)
	}
	if _, ok := readyLine([]byte("jetstream starting\n")); ok {
		t.Fatal("a line without a URL is no ready line")
	}
}

// serverLog keeps the warnings and errors a nats-server logs, for a
// failure's message. The server logs from many goroutines: mu guards lines.
type serverLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *serverLog) add(level, format string, v []any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, level+" "+fmt.Sprintf(format, v...))
}

func (l *serverLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func (l *serverLog) Noticef(string, ...any)         {}
func (l *serverLog) Debugf(string, ...any)          {}
func (l *serverLog) Tracef(string, ...any)          {}
func (l *serverLog) Warnf(format string, v ...any)  { l.add("WRN", format, v) }
func (l *serverLog) Errorf(format string, v ...any) { l.add("ERR", format, v) }
func (l *serverLog) Fatalf(format string, v ...any) { l.add("FTL", format, v) }

// freshStream made back to back on one server always succeeds and leaves
// only its newest stream of the load (beside the held one): a stream
// deleted just before the next is made must not take the account's
// streams directory with it.
func TestFreshStreamBackToBack(t *testing.T) {
	ns, logs := jsTestServer(t)
	_, j := testkit.JetStream(t, ns.ClientURL())
	ctx := context.Background()
	o := jsLoadOptions()
	var last string
	for i := 0; i < 200; i++ {
		var err error
		if last, err = freshStream(ctx, j, o); err != nil {
			t.Fatalf("stream %d: %v\nserver log:\n%s", i, err, logs)
		}
	}
	var names []string
	for n := range j.StreamNames(ctx).Name() {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := []string{o.js.stream + "-HOLD", last}; !slices.Equal(names, want) {
		t.Fatalf("streams %q, want %q", names, want)
	}
}

// jsTestServer starts an embedded nats-server with JetStream on a directory
// of the test's, which the test's cleanup stops, and keeps its warnings and
// errors for failure messages.
func jsTestServer(t *testing.T) (*embedded.NATS, *serverLog) {
	t.Helper()
	ns, err := embedded.StartNATS(embedded.NATSConfig{Listen: "127.0.0.1:-1", JetStreamDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Stop)
	logs := &serverLog{}
	ns.Server().SetLoggerV2(logs, false, false, false)
	return ns, logs
}
