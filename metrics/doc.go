// Package metrics owns the bridge's Prometheus collectors and their
// exposition: the push counters the front door feeds (requests, items by
// status, latency), fusion's bundle hook, and gauges and counters that read
// the Stats snapshots of fusion, the rooms and pgwire at scrape time.
//
// Metric names are part of the contract (SPEC.md). Only metrics, bridge and
// cmd import Prometheus; the parts it reads never do. It starts no
// goroutine; collectors are safe for concurrent use.
package metrics
