// Package ownership gives every partition one writing bridge at a time.
//
// Partitions fall into a fixed number of buckets (a hash of tenant, queue
// and partition). Each bucket's owner is the live bridge that scores highest
// for it under rendezvous hashing over the bridges' ids, a rule every bridge
// computes alike from the same member list; a membership change moves only
// the buckets the joining or leaving bridge wins or loses.
//
// The member list comes from heartbeats on <prefix>.v1.bridges: each bridge
// announces itself when it starts (and every other bridge answers at once),
// every Heartbeat after, and when it stops; a bridge not heard from for
// three heartbeats is gone. A bridge that receives a push sends the groups
// it does not own to their owner on the owner's own subject,
// <prefix>.v1.forward.<id>, concurrent requests' groups for one owner in one
// message (gather.go), and merges
// the answers; when the owner does not answer in time it writes the groups
// itself.
//
// Producers may skip the forward: every bridge answers the owners' table
// on <prefix>.v1.owners, announces it on <prefix>.v1.owners.changed when it
// changes, and the bridge front door serves each bridge's own push subject
// (PushSubject); a partition-aware client sends each partition's items
// there (clients.go). The owner checks ownership as for any push.
//
// Ownership is a performance rule only. PostgreSQL's row locks and the
// dedup probe keep the log exactly-once whoever writes, so a stale or wrong
// owner costs time, never data. For that reason a group written locally
// after a forward was attempted never skips the probe (docs/ownership.md).
//
// It must not import bridge, push, pgwire, jsonapi, net/http or
// Prometheus: it writes through fusion, and renders the owners' table
// clients read beside the subjects that carry it (clients.go).
//
// A Router is owned by the bridge that starts and stops it. Its member
// table is an immutable snapshot behind an atomic pointer, replaced by the
// one goroutine that reads heartbeats; look-ups on the push path take no
// lock.
package ownership
