// Package spool is the bridge's durable on-disk record log: what PostgreSQL
// could not take (a failed bundle, maintenance mode) is appended here, fsynced,
// and only then answered "buffered"; a drain later replays it.
//
// Layout: files spool-<20-digit sequence>.log in one directory, appended to
// in sequence order and rolled at Config.FileBytes. The directory is mode
// 0700 and its files 0600: payloads of unencrypted queues are plaintext.
// Each record is
//
//	magic f1 51 53 02 | length uint32 LE | CRC-32C (Castagnoli) of the body uint32 LE | body
//
// and the body is one Record (record.go); records written before the magic
// existed lack it and still read. A crash can leave the newest file with a
// torn tail: Open cuts it at the last whole record, keeping every whole
// record before it. A damaged record in the middle of a file (a bad sector,
// a stray write) is passed over: the reader looks for the next magic whose
// length and CRC check out, and keeps every whole record from there; the
// bytes passed over are counted (Stats.SkippedBytes).
//
// Durability order: Append returns only after the bytes it wrote are fsynced.
// Appends from many goroutines are group-committed: one writer goroutine owns
// the open file, takes every batch that is waiting, writes them all, fsyncs
// once, and then answers each caller. A new file's directory entry is fsynced
// before any record in it is acknowledged.
//
// Draining: Drain seals the file being written (rolls to a new one), then
// hands the sealed files' records, oldest first, to a replay function. A file
// is deleted only after the replay accepted all of its records (the ones to
// keep are appended again first), so a crash at any point replays a file
// again rather than losing it; the bridge's deduplication makes that
// idempotent.
//
// spool must not import pgwire, fusion or bridge, nor NATS, net/http or
// Prometheus.
package spool
