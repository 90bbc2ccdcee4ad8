// Command queen-bench loads a running queen-bridge over NATS or HTTP, or
// writes the same load straight into PostgreSQL as a baseline, and reports
// throughput, latency, item statuses and CPU per item (the bridge from its
// process_cpu_seconds_total, PostgreSQL from /proc when the server is on
// this machine, and queen-bench itself): a progress line every second, a
// line per -window with the bridges' bundle calls (how many, and their mean
// time as the bridges measure it: queen_fusion_commits_total,
// queen_fusion_bundle_errors_total, queen_fusion_call_seconds_total), a
// report at the end.
//
// Baselines (-target, with -pg-dsn), in tables of the queen_bench schema:
//
//	direct       one INSERT + COMMIT per message into a plain table
//	partitioned  per message, UPDATE a partition row's offset and INSERT the
//	             message at it, one commit each: the naive partitioned log
//	batch        one multi-row INSERT per request
//
// -target jetstream publishes with nats.go's jetstream.PublishAsync, as a
// JetStream producer does, into a bridge with a stream (QUEEN_JETSTREAM) or
// into a real JetStream stream (-create-stream); -serve-jetstream DIR runs
// such a server (file storage, -sync-always for sync_interval: always) in
// a process of its own, whose CPU -server-pid reads. compare-jetstream.sh
// runs the comparison of docs/jetstream.md.
//
// -js-consume MODES runs the JetStream consumer load (jsconsume.go) on
// each of -js-targets: the bridge at -nats (its stream -stream, its CPU
// from -metrics, PostgreSQL's with -pg-dsn) and real JetStream file-storage
// streams on nats-servers it starts in processes of their own (always:
// sync_interval: always; default: the default sync). -clients publishers
// (PublishAsync, -pending acks outstanding each) write -payload-byte
// payloads that start with their send time over -partitions subjects
// <subject>.<i>; -js-consumers Consume() consumers of one durable pull
// consumer acknowledge every message (-double-ack: DoubleAck) and time it
// from that stamp (p50/p90/p99). Modes: push (publishers alone), drain (a
// backlog, then the consumers, timed from their first pull: CPU per
// consumed message beside per pushed), both (publishers saturating and
// consumers at once), paced (publishers on a timetable at -rate, or -pace
// × the push mode's msgs/s), lone (one publisher at -lone-rate, one
// consumer). One table at the end, and a "result" line per run;
// compare-jsconsume.sh runs it in rounds on fresh clusters and prints the
// medians. A target that does not answer the JetStream API fails each
// consumer mode at once ("no responders"); consumers that receive nothing
// for -stall end their mode with an error, and a publish unanswered that
// long fails:
//
//	queen-bench -js-consume all -js-targets bridge,always,default \
//	    -nats nats://127.0.0.1:4222 -pg-dsn postgres://queen_bridge:PASSWORD@127.0.0.1:5432/queen
//
// -consumers N adds consumers that pop and acknowledge while the clients
// push (consumemode.go); with -pipeline-to PREFIX each consumer forwards
// its popped batch to queue PREFIX<n> in one transaction per batch (the
// batch's pushes and its acknowledgements, POST /api/v1/transaction or
// <prefix>.v1.transaction) instead, and the report gives the forwarded
// items/s and CPU per forwarded item (pipeline.go).
//
// -publish-tx measures queen.publish in the callers' own transactions
// (publishtx.go, docs/publish.md): -clients connections to -pg-dsn (the
// log's database, which a bridge relays) run BEGIN; INSERT a 200-byte row;
// COMMIT, then the same with queen.publish, then with an outbox-table
// INSERT, each for -duration, and report transactions/s and PostgreSQL's
// CPU per transaction of each (the publish shape's until the bridge stored
// every message: the relay's decoding and the log's writes are
// PostgreSQL's too) and their ratios; then commit-to-stored p50/p99 at
// half the publish shape's rate on a timetable, from a COMMIT's return
// until a poller sees the message's offset in its partition.
//
// -console measures what an open console costs PostgreSQL (console.go):
// it fills -queues queues of -partitions partitions in all, then reads the
// overview's route and the first queue's page every 2 s, as an open
// browser tab does, and reports PostgreSQL's CPU as % of one core beside a
// window with nothing open (docs/console.md):
//
//	queen-bench -console -queues 10 -partitions 1000 -duration 60s \
//	    -pg-dsn postgres://queen_bridge:PASSWORD@127.0.0.1:5432/queen
//
// -compare runs the bridge and the three baselines back to back on the same
// database and prints one table with items/s, p50/p99, the bridge's ratio to
// each, and the CPU split (an embedded cluster's passwords are in
// QUEEN_DATA_DIR/pg.credentials):
//
//	queen-bench -compare -pg-dsn postgres://queen_bridge:PASSWORD@127.0.0.1:5432/queen \
//	    -clients 64 -items 1 -partitions 1000 -duration 10s
package main
