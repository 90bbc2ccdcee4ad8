// Package bridge is queenbridge's front door: the NATS micro service
// (queen.v1.push, queen.v1.push.<tenant>, queen.v1.configure) and the HTTP
// shim (/api/v1/push, /api/v1/configure, /health, /metrics/prometheus).
//
// A push body is read once. Every item is validated before anything is
// submitted; payloads stay sub-slices of the body until segment packs them.
// Per item the bridge mints a UUIDv7, resolves the transactionId (the
// client's, or the id), the partition ("Default"), and applies layer-1
// deduplication: inside one request the first (queue, partition,
// transactionId) leads and later ones follow, producing no frame and copying
// the leader's final verdict. Payloads of encrypted queues are sealed (by
// queues, AES-256-GCM) before they leave the bridge. Leaders are grouped by partition;
// each group is one fusion.Submission, and the answer is rendered once every
// group has its verdicts.
//
// Goroutines: a NATS request is handed from the delivery goroutine to a
// bounded worker pool that decodes and submits; nobody waits for verdicts:
// the goroutine that settles a request's last group (a fusion flush) renders
// and sends the reply. An HTTP request waits in its own net/http goroutine.
//
// Failure model:
//
//   - "queued" means committed in PostgreSQL; "buffered" means fsynced in the
//     spool. Nothing else is answered as success.
//   - An item whose bundle failed (database unreachable, statement timeout,
//     a bad result) or that fusion did not accept is spooled (as the frame it
//     became: encrypted already where the queue asks) and answered
//     "buffered"; if the spool cannot take it, "failed", with the reason.
//   - Maintenance mode (queen.system_state, broadcast on
//     <prefix>.v1.maintenance.changed, re-read every MaintenancePoll): every
//     item goes to the spool; nothing reaches PostgreSQL.
//   - The drain replays the spool, oldest first, with the original message
//     ids and transactionIds, always probed for duplicates over at least the
//     time since spooling, so a replay after a crash (of the bridge, or in the
//     middle of a drain), or of a record whose bundle did commit after all,
//     writes nothing twice.
//
// Bridge composes the rooms behind the front door and holds none of their
// state: queues (queue settings, configure, encryption), readside (fetch,
// parked reads, the hot-list, peer announcements) and durability
// (maintenance mode, the spool and its drain, retention). It builds them
// from its Config in New, starts them before opening intake and stops them
// after the last accepted request is answered (docs/architecture.md).
//
// Only bridge (and cmd) import net/http and Prometheus. bridge reads request
// headers, never the environment.
package bridge
