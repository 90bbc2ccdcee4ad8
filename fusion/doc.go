// Package fusion owns the commit boundary of the write path.
//
// A push request hands fusion one Submission per (tenant, queue, partition)
// group. Fusion accumulates the frames of each partition, decides when to
// flush, and commits the segments of many partitions together through one
// Sink.PushBundle call (one PostgreSQL transaction, one fsync). Every frame's
// verdict is routed back to the submission it came from.
//
// Rules (see docs/fusion.md):
//
//   - Shards. A partition belongs to one of Config.Shards shards (a hash of
//     tenant, queue and partition). One goroutine owns each shard's state:
//     submissions, flush completions and permit wake-ups reach it through
//     channels, and no mutex guards shard state.
//   - Fire-on-idle. When the shared limit of bundles in flight grants a
//     permit at once, ready partitions dispatch now, with no hold timer.
//   - One flush in flight per partition. A partition whose flush is in flight
//     accumulates its next segment and becomes ready again only when the
//     completion reaches the shard, which the flush sends after the commit.
//     Two flushes therefore never race on the partition's allocator, and
//     offset order equals commit order. The flush returns its permit only
//     after every shard of the bundle has applied the completion and set
//     out what its partitions hold (completion.reopened), so the bundle the
//     permit fires takes the frames that came while they were in flight.
//     When that leaves segments in the outbox, the flush keeps the permit
//     and sends them as its next bundle itself (Fusion.next,
//     inflightLimit.pass), with the verdicts of the one done going out
//     beside it; otherwise the permit goes back and wakes the shards
//     waiting for one.
//   - Bundling, across shards. One dispatch takes up to Config.BundleMax
//     segments and Config.BundleMaxBytes (take.go): those shards left in the
//     outbox (outbox.go) when they found no permit, oldest first, then the
//     shard's own ready partitions. The in-flight gate keeps bundles
//     disjoint; each segment's completion goes back to the shard that owns
//     its partition. The outbox list is the one piece of shared state
//     besides the limit, under its own mutex.
//   - Bytes. A segment takes a partition's pending frames, in order, while
//     they fit in what is left of the bundle's bytes; the rest waits for the
//     partition's next flush (after this one commits). A single frame larger
//     than the bound is written alone. A repeat of a leader follows it even
//     from behind the cut, so a split changes no verdict.
//   - Bundles in flight (inflight.go): 1 + floor(F / W) within
//     [Config.InFlightMin, Config.InFlightMax], where F is the database's
//     commit flush (measured by the Sink's FlushMeter) and W the working
//     part of a bundle call (its moving average less F, at least F/8):
//     one bundle, plus as many as can do their work while one waits for
//     its flush. It rises by one per flush reading and falls at once.
//     Without a FlushMeter it stays at Config.InFlightInitial.
//   - Config.HoldTick is a backstop only: arrivals, completions and freed
//     permits are what wake a shard.
//
// Deduplication here is layer 2: inside one flush, frames of a partition with
// the same 16-byte hash collapse onto the first (the leader); followers inherit
// its verdict. Each partition also keeps a bounded set of the hashes this
// bridge wrote inside the queue's window (package recent), which answers repeats
// without SQL and lets fusion pass a tight p_verified (docs/fusion.md,
// "Deduplication in fusion"; docs/write-path.md, "The dedup probe's ranges"). The invariant, enforced in partition.go: every frame stored at or
// below verified inside the window is in that set (or older than the window).
// Offsets another writer wrote are read into the set once when the Sink is a
// HashSource (shard.go, maybeFill). The sets share one byte budget
// (Config.RecentHashBytes); a set that must forget entries still in the
// window sends their range to be probed alone (Write.ForgottenLo/Hi), and
// p_verified stays tight. A segment of only bridge-minted transactionIds
// (Submission.Minted) skips the probe. A window that grows reopens
// everything to the probe. A deleted queue's partitions are forgotten
// (Forget): their ids and hashes were of partitions that are gone.
//
// Failure model: a frame is Queued only when the Sink reported its segment
// committed. A Sink error makes every frame of the bundle Error; the caller
// (the push call, push) spools those. A Duplicate segment wrote nothing: its duplicate
// frames get the original's offset and message id (zero id when retention
// removed it), and its other frames go back to the head of the partition's
// next segment, so nothing is lost and order is kept.
//
// fusion must not import pgwire, spool, bridge, NATS, net/http or
// Prometheus. It contains no SQL: it writes through the Sink interface and
// reports through Stats and Config.OnBundle.
package fusion
