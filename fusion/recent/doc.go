// Package recent is fusion's memory of the frames this bridge wrote: per
// partition, a Table of the 16-byte transactionId hashes with their offset
// and commit time (32 bytes per frame with its index), answering "was this
// hash written inside the window, and at which offset" without SQL, and
// which offsets it had to forget while still inside the window (so that the
// dedup probe covers those, and only those). All tables of one Fusion share
// one byte Budget.
//
// A Table belongs to the goroutine of the shard that owns its partition; a
// Budget is shared (atomic). It imports segment only (the hash size).
package recent
