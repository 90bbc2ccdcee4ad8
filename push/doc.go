// Package push is the push call: from a decoded push request (the front
// door decodes, and answers a body that does not) to its answer. Per item
// it mints a UUIDv7, resolves the transactionId (the client's, or the id)
// and applies layer-1 deduplication: inside one request the first (queue,
// partition, transactionId) leads and later ones follow, producing no
// frame and copying the leader's final verdict. Payloads of encrypted
// queues are sealed (by queues) before they leave the call. Leaders are
// grouped by partition; groups another bridge owns are forwarded to it
// (ownership), each other group is one fusion.Submission, and the answer
// is rendered (jsonapi) once every group has its verdicts. The call
// refuses a request whole only when the bridge stops or it names too many
// partitions, and counts every request it is handed (Observer.Request).
// A transaction's pushes (Queen's transaction wire) are prepared by the
// same code (PrepareTxn) and handed back, not submitted: the consume room
// writes them with the transaction's acknowledgements.
//
// It must not import bridge, consume, pgwire, NATS, net/http or
// Prometheus: the front door admits requests and carries answers; fusion
// writes. It reaches the rooms it uses through interfaces as narrow as
// its use of them (Submitter, Owners, Sealer, Spooler, Announcer), which
// their owner types satisfy and its tests fake.
//
// Goroutines: a call runs on its caller's goroutine until its groups are
// submitted; nobody waits for verdicts: the goroutine that settles the
// call's last group (a fusion flush, or the router's for a forward)
// renders and answers. A request over more than submitWindow partitions
// has a feeder goroutine of its own, which ends after its last submission.
//
// Failure model:
//
//   - "queued" means committed in PostgreSQL; "buffered" means fsynced in
//     the spool. Nothing else is answered as success.
//   - An item whose bundle failed (database unreachable, statement
//     timeout, a bad result) or that fusion did not accept is spooled (as
//     the frame it became: encrypted already where the queue asks) and
//     answered "buffered"; if the spool cannot take it, "failed", with the
//     reason.
//   - Maintenance mode: every item goes to the spool; nothing reaches
//     PostgreSQL. The drain (durability) replays the spool later with the
//     original ids and transactionIds, always probed for duplicates.
package push
