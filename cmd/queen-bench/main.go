package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

type options struct {
	target     string // bridge, direct, partitioned, batch
	transport  string // for the bridge: nats or http
	natsURL    string
	prefix     string
	httpAddr   string
	httpClient string // the push target's HTTP client: net or lean
	metricsURL string // the bridge's Prometheus page, for its CPU and fusion counters
	pgDSN      string // the baselines' database; also PostgreSQL's CPU
	clients    int
	items      int
	partitions int
	queues     int
	payload    int
	group      bool // every item of a request goes to one partition
	mint       bool // bridge items carry no transactionId: the bridge mints one
	aware      bool // partition-aware: each request's items on their owner's own subject
	duration   time.Duration
	window     time.Duration // print a summary line per window (0: none)
	compare    bool
	run        string
	js         jsOptions
	jsc        jscOptions // the JetStream consumer load (-js-consume)

	consumers         int     // consume mode: consumers of one group (0: off)
	consumeBatch      int     // messages a pop may deliver
	consumePartitions int     // partitions a pop may claim
	consumeGroup      string  // the consumer group
	consumeOnly       bool    // consume what is there; push nothing
	queuePrefix       string  // queues are <queuePrefix><n>
	publishTx         bool    // the transactional publish load (publishtx.go)
	rate              float64 // items/s of the whole push side on a schedule (0: closed loop)
	groups            int     // consume mode: consumer groups reading the same queues
	pipelineTo        string  // pipeline mode: forward each popped batch to <pipelineTo><n> in one transaction ("": acknowledge)

	console         bool          // console mode: what an open console costs PostgreSQL
	consoleEvery    time.Duration // console mode: the pages' refresh
	consoleBaseline time.Duration // console mode: PostgreSQL's CPU with nothing open, measured first (0: not measured)
	token           string        // HTTP bearer token (console mode)
}

func main() {
	var o options
	flag.StringVar(&o.target, "target", "bridge", "what to load: bridge; jetstream (PublishAsync to a JetStream stream, or a bridge with QUEEN_JETSTREAM); or a baseline written straight into PostgreSQL (-pg-dsn): direct (one INSERT + COMMIT per message), partitioned (UPDATE a partition's offset + INSERT, one commit per message), batch (one multi-row INSERT per request)")
	flag.StringVar(&o.transport, "transport", "nats", "bridge transport: nats or http")
	flag.StringVar(&o.natsURL, "nats", "nats://127.0.0.1:4222", "NATS URL")
	flag.StringVar(&o.prefix, "prefix", "queen", "subject prefix")
	flag.StringVar(&o.httpAddr, "http", "127.0.0.1:6632", "bridge HTTP address")
	flag.StringVar(&o.httpClient, "http-client", "net", "the push target's HTTP client: net (net/http's) or lean (kept-alive connections of its own, one write a request, answers read by Content-Length: about half the load generator's CPU a push)")
	flag.StringVar(&o.metricsURL, "metrics", "", "bridge metrics URL for its CPU per item, or a comma list of several bridges' (summed) (default http://<-http>/metrics/prometheus, or none for -target jetstream; \"none\" reads none, as for a floor)")
	flag.StringVar(&o.pgDSN, "pg-dsn", "", "PostgreSQL for the baselines, and PostgreSQL CPU per item (when local)")
	flag.IntVar(&o.clients, "clients", 16, "concurrent requesters")
	flag.IntVar(&o.items, "items", 1, "items per request")
	flag.IntVar(&o.partitions, "partitions", 100, "partitions written to (spread over the queues)")
	flag.IntVar(&o.queues, "queues", 1, "queues written to")
	flag.IntVar(&o.payload, "payload", 200, "payload size in bytes")
	flag.BoolVar(&o.group, "group", false, "send all items of one request to one partition (default: spread them)")
	flag.BoolVar(&o.aware, "aware", false, "partition-aware (bridge over NATS): read the bridges' owners' table and send each request's items to their owner's own subject, as the Go client's PartitionAware does (default: the shared subject)")
	flag.BoolVar(&o.mint, "mint", false, "send bridge items without a transactionId, so the bridge mints one (default: unique client transactionIds)")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "how long to push (each target, with -compare)")
	flag.DurationVar(&o.window, "window", 0, "also print items/s and the bridges' bundle calls (count, mean time) per window of this length (0: off)")
	flag.BoolVar(&o.compare, "compare", false, "run the bridge and the three baselines back to back on the same database and print one table")
	flag.StringVar(&o.js.stream, "stream", "BENCH", "jetstream target: the stream name the acks must carry")
	flag.StringVar(&o.js.subject, "subject", "bench.js", "jetstream target: messages go to <subject>.p<n>")
	flag.IntVar(&o.js.window, "pending", 256, "jetstream target: acks each publisher waits for at once (PublishAsyncMaxPending)")
	flag.BoolVar(&o.js.create, "create-stream", false, "jetstream target: create the stream first (file storage, subjects <subject>.>) on a JetStream server")
	flag.IntVar(&o.js.serverPID, "server-pid", 0, "the process id of a server beside the bridge (a JetStream server, -serve-echo), for its CPU per item")
	serveDir := flag.String("serve-jetstream", "", "run a nats-server with JetStream file storage in this directory until interrupted (the jetstream target's real stream), instead of loading")
	serveListen := flag.String("listen", "127.0.0.1:4333", "with -serve-jetstream: the client address")
	serveEchoAddr := flag.String("serve-echo", "", "run the NATS floor on this client address until interrupted: an embedded nats-server and a micro endpoint on <prefix>.v1.push answering every item queued after -echo-delay, no other work (load it as a bridge over NATS, its CPU with -server-pid); http://ADDR: the HTTP floor, a listener answering every request 201 after the delay (load it with -transport http)")
	echoDelay := flag.Duration("echo-delay", time.Millisecond, "with -serve-echo: how long each answer waits (where the bridge waits for PostgreSQL)")
	syncAlways := flag.Bool("sync-always", false, "with -serve-jetstream: fsync every message before its ack (sync_interval: always)")
	flag.IntVar(&o.consumers, "consumers", 0, "consume mode (bridge target): this many consumers of one group pop and acknowledge while the clients push (0: off)")
	flag.IntVar(&o.consumeBatch, "consume-batch", 100, "consume mode: messages one pop may deliver")
	flag.IntVar(&o.consumePartitions, "consume-partitions", 1, "consume mode: partitions one pop may claim")
	flag.StringVar(&o.consumeGroup, "consume-group", "bench", "consume mode: the consumer group")
	flag.BoolVar(&o.consumeOnly, "consume-only", false, "consume mode: push nothing, consume what earlier runs left (CPU per consumed item)")
	flag.Float64Var(&o.rate, "rate", 0, "open loop: push this many items/s in all on a schedule (requests of -items due at fixed times, taken by whichever client is free; a request whose client was busy is sent late and counted); latencies, and push-to-delivery in consume mode, from the scheduled time (0: closed loop, each client sends when its answer is back)")
	flag.IntVar(&o.groups, "groups", 1, "consume mode: this many consumer groups read the same queues at once, named <consume-group>-<i> (one: <consume-group>), each with -consumers consumers of its own; every group drains the same messages")
	flag.StringVar(&o.pipelineTo, "pipeline-to", "", "pipeline mode (with -consumers): each consumer forwards its popped batch from queue <queue-prefix><n> to queue <pipeline-to><n> in one transaction per batch (the batch's pushes and its acknowledgements), instead of acknowledging it; reports forwarded items/s and CPU per forwarded item")
	flag.BoolVar(&o.console, "console", false, "console mode (bridge over HTTP): fill -queues queues of -partitions partitions in all, then read what an open console reads (the overview and the first queue's page) every -console-every for -duration, and report PostgreSQL's CPU (needs -pg-dsn) as % of one core, beside a window of -console-baseline with nothing open")
	flag.DurationVar(&o.consoleEvery, "console-every", 2*time.Second, "console mode: the pages' refresh")
	flag.DurationVar(&o.consoleBaseline, "console-baseline", 20*time.Second, "console mode: measure PostgreSQL with nothing open this long first (0: not)")
	flag.StringVar(&o.token, "token", "", "console mode: the bearer token of the bridge's HTTP routes (with QUEEN_HTTP_TOKENS or QUEEN_HTTP_ADMIN_TOKENS set)")
	flag.StringVar(&o.jsc.modes, "js-consume", "", "JetStream consumer load (jsconsume.go): run these modes, a comma list of push, drain, both, paced, lone, or all, on each of -js-targets, and print one table; -clients publishers (PublishAsync, -pending each), -partitions subjects <subject>.<i>, -payload bytes, -duration a mode")
	flag.StringVar(&o.jsc.targets, "js-targets", "bridge,always,default", "JetStream consumer load: a comma list of bridge (the stream -stream of the bridge at -nats, its CPU from -metrics, PostgreSQL's with -pg-dsn), always and default (a real JetStream file-storage stream on a nats-server this run starts in a process of its own, sync_interval: always or the default sync)")
	flag.IntVar(&o.jsc.consumers, "js-consumers", 16, "JetStream consumer load: Consume() consumers of the one durable, each its own connection")
	flag.StringVar(&o.jsc.durable, "durable", "bench", "JetStream consumer load: the durable is <durable>-<run>-<mode> (DeliverPolicy new, made before the publishing, deleted after)")
	flag.BoolVar(&o.jsc.doubleAck, "double-ack", false, "JetStream consumer load: acknowledge with DoubleAck (answered once the ack is stored) instead of Ack")
	flag.Int64Var(&o.jsc.backlog, "backlog", 0, "JetStream consumer load, drain: publish this many messages before consuming (0: publish for -duration)")
	flag.Float64Var(&o.jsc.pace, "pace", 0.25, "JetStream consumer load, paced without -rate: the timetable's rate as a share of the push mode's msgs/s on the same target in this run")
	flag.Float64Var(&o.jsc.loneRate, "lone-rate", 100, "JetStream consumer load, lone: the one publisher's msgs/s")
	flag.IntVar(&o.jsc.pullMax, "pull-max", 0, "JetStream consumer load: each Consume()'s PullMaxMessages (0: nats.go's default, 500)")
	flag.IntVar(&o.jsc.maxAckPending, "max-ack-pending", 0, "JetStream consumer load: the durable's max_ack_pending (0: the server's default)")
	flag.DurationVar(&o.jsc.stall, "stall", 30*time.Second, "JetStream consumer load: fail a mode whose consumers receive nothing this long while messages wait, and a publish unanswered this long")
	flag.BoolVar(&o.publishTx, "publish-tx", false, "transactional publish load (publishtx.go, docs/publish.md): -clients connections to -pg-dsn (the log's database, relayed by a bridge) run BEGIN; INSERT a 200-byte row; COMMIT, then the same with queen.publish, then with an outbox-table INSERT, each for -duration; transactions/s and PostgreSQL CPU per transaction of each, then commit-to-stored p50/p99 at half the publish rate")
	flag.StringVar(&o.queuePrefix, "queue-prefix", "bench.q", "queues are named <queue-prefix><n>")
	flag.StringVar(&o.run, "run", fmt.Sprintf("r%d", time.Now().Unix()), "prefix of every transactionId (unique per run)")
	flag.Parse()
	if *serveEchoAddr != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := serveEcho(ctx, *serveEchoAddr, o.prefix, *echoDelay, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "queen-bench:", err)
			os.Exit(1)
		}
		return
	}
	if *serveDir != "" {
		if err := serveJetStream(*serveDir, *serveListen, *syncAlways, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "queen-bench:", err)
			os.Exit(1)
		}
		return
	}
	o.metricsURL = metricsURL(o)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	if err := benchMain(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "queen-bench:", err)
		os.Exit(1)
	}
}

// metricsURL is the bridge's metrics page -metrics names: by default the
// one at -http (a JetStream server has no such page); "none" reads none (a
// floor, -serve-echo, has none either).
func metricsURL(o options) string {
	switch {
	case o.metricsURL == "none":
		return ""
	case o.metricsURL == "" && o.target != "jetstream":
		return "http://" + o.httpAddr + "/metrics/prometheus"
	}
	return o.metricsURL
}

// benchMain runs one target, or the comparison.
func benchMain(ctx context.Context, o options, out io.Writer) error {
	if o.rate < 0 {
		return fmt.Errorf("-rate must not be negative, got %g", o.rate)
	}
	if o.jsc.modes != "" {
		return runJSConsume(ctx, o, out)
	}
	if o.publishTx {
		return runPublishTx(ctx, o, out)
	}
	if o.rate > 0 && (o.target == "jetstream" || o.console) {
		return fmt.Errorf("-rate drives a push load to the bridge or a baseline, not -target jetstream or -console")
	}
	if o.target == "jetstream" {
		_, err := runJetStream(ctx, o, out)
		return err
	}
	if o.console {
		return runConsole(ctx, o, out)
	}
	if o.consumers == 0 && (o.groups > 1 || o.pipelineTo != "") {
		return fmt.Errorf("-groups and -pipeline-to belong to the consume mode: add -consumers")
	}
	if o.consumers > 0 {
		_, err := runConsume(ctx, o, out)
		return err
	}
	if !o.compare {
		_, err := run(ctx, o, out)
		return err
	}
	if o.pgDSN == "" {
		return fmt.Errorf("-compare needs -pg-dsn (the bridge's database) for the baselines")
	}
	var rows []*result
	for _, t := range []string{"bridge", "direct", "partitioned", "batch"} {
		to := o
		to.target, to.run = t, o.run+"-"+t
		r, err := run(ctx, to, out)
		if err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
		rows = append(rows, r)
	}
	compareTable(out, o, rows)
	return nil
}

// describe is the load shape, for reports.
func describe(o options) string {
	spread := "spread over"
	if o.group {
		spread = "each request to one of"
	}
	via := o.target
	switch o.target {
	case "bridge":
		via = "bridge/" + o.transport
		if o.aware {
			via += " partition-aware"
		}
	case "jetstream":
		return fmt.Sprintf("jetstream PublishAsync to stream %s at %s, %d publishers × %d pending, %s.p0..p%d, %d-byte payloads",
			o.js.stream, o.natsURL, o.clients, o.js.window, o.js.subject, o.partitions-1, o.payload)
	}
	open := ""
	if o.rate > 0 {
		open = fmt.Sprintf(", open loop at %g items/s", o.rate)
	}
	return fmt.Sprintf("%s, %d clients × %d items, %s %d partitions (%d queues), %d-byte payloads%s",
		via, o.clients, o.items, spread, o.partitions, o.queues, o.payload, open)
}

// payloadOf is the JSON payload of every item.
func payloadOf(size int) []byte {
	return []byte(`{"data":"` + strings.Repeat("x", max(0, size-11)) + `"}`)
}
