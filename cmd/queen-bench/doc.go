// Command queen-bench loads a running queen-bridge over NATS or HTTP and
// reports throughput, latency and item statuses: a progress line every
// second, a report at the end.
//
//	queen-bench -transport nats -clients 64 -items 10 -partitions 1000 -duration 20s
package main
