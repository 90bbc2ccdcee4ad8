// Package peers is what bridges say to each other over NATS, outside any
// request: the subjects of the broadcasts (maintenance changes, queue
// settings changes, MESSAGE_AVAILABLE) and the Queen-Origin header that
// names the bridge a message came from, so that a bridge can drop its own.
//
// The rooms that broadcast (durability, queues, readside) each publish and
// subscribe through a Link; what they send is theirs. peers imports nothing
// of the project. A Link is a value; its NATS connection is safe for
// concurrent use.
package peers
