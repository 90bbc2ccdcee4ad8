// Package durability owns what keeps an acknowledged push safe when
// PostgreSQL cannot take it, and the log tidy when it can: maintenance mode
// (the flag in queen.system_state, its broadcast on
// <prefix>.v1.maintenance.changed so every bridge switches together, and a
// re-read every MaintenancePoll as a backstop), pop maintenance (pops
// deliver nothing; kept, broadcast on <prefix>.v1.maintenance.pop.changed
// and polled the same way), the spool that takes items whose write failed
// (Spool: the push call hands them over), the drain that replays the spool, and the retention ticks, which also
// purge the segments that deleted queues left (the Store's PurgeStep); and the
// health answer (ServeHealth: does PostgreSQL answer, is NATS connected).
//
// Failure model:
//
//   - "buffered" means fsynced in the spool (Spool returns nil).
//   - Maintenance mode: nothing reaches PostgreSQL; the push call (push)
//     spools every item. The drain starts when maintenance ends.
//   - The drain replays the spool, oldest first, with the original message
//     ids and transactionIds, always probed for duplicates over at least the
//     time since spooling, so a replay after a crash (of the bridge, or in
//     the middle of a drain), or of a record whose bundle did commit after
//     all, writes nothing twice.
//
// It must not import bridge, queues, readside or pgwire, nor net/http or
// Prometheus. It reaches PostgreSQL through its Store (store.go: the
// pgwire calls it makes, which *pgwire.DB satisfies; their results are
// storage's types).
//
// Goroutines: Keeper owns the maintenance poll, the drain loop and the
// retention loop (Start starts them; Stop ends them and waits, a drain in
// progress finishing its chunk, so fusion must still run). The switches
// are atomics, read on every push and every pop.
package durability
