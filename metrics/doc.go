// Package metrics owns the bridge's Prometheus collectors and their
// exposition: the push counters the push call feeds (requests, items by
// status, latency; *Metrics satisfies push.Observer, and consume.Observer
// for the consumer calls), fusion's bundle hook, and gauges and counters
// that read the Stats snapshots of fusion, the rooms and the database at
// scrape time (the database through Database, which *pgwire.DB satisfies,
// its figures storage's types).
//
// Metric names are part of the API (docs/api.md, "Metrics", lists them). Only
// metrics, bridge and cmd import Prometheus; the parts it reads never do.
// It must not import bridge, push or pgwire, nor NATS. It starts no goroutine;
// collectors are safe for concurrent use.
package metrics
