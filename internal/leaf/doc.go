// Package leaf is a client of nats-server's leafnode protocol: it connects
// to a server's leafnode listener (the hub) as a leaf node that has no
// clients of its own, sends messages with any reply subject, and keeps the
// set of subscriptions the hub announces.
//
// Why it exists: nats-server refuses a client's publish whose reply subject
// starts with `$JS.ACK.` ("Permissions Violation for Publish with Reply"),
// and JetStream clients require exactly that reply on every message a pull
// consumer delivers. A leaf connection is not checked for reserved replies,
// and the hub splits a reply `$JS.ACK.…@<subject>` into the subject the
// client sees and the ack reply, as it does for its own JetStream. Status
// messages (a header block "NATS/1.0 408 Request Timeout…") go over the same
// connection, so they never overtake the messages before them.
//
// It speaks nats-server's internal server-to-server protocol, not a
// published client API: it is written against nats-server v2.15.2
// (server/leafnode.go: INFO, CONNECT with user and password or token and
// headers, PING/PONG, LMSG/HMSG out, LS+/LS- and -ERR in), and its tests
// run it against that server. A nats-server upgrade must pass them.
//
// What it owns: one TCP (or TLS) connection at a time and two goroutines,
// both stopped and waited for by Close: the reader, which handles the
// hub's protocol lines and, when the connection breaks, connects again
// with backoff (the only goroutine that makes connections); and the
// flusher, which writes out what Publish buffered (Publish returns once
// the message is buffered; a burst of small messages leaves in few
// writes; a caller that publishes a batch brackets it with Hold and
// Release, and the batch leaves in one write at Release) and sends
// keep-alive PINGs. A lock keeps each message whole and
// the messages of a Conn in the order Publish was called; a second guards
// the subscription set, which only the reader changes.
//
// Interest: the hub sends LS+ for a plain subject when its first
// subscriber comes and LS- when the last goes, and for a queue group its
// weight; Interested matches a literal subject against what is announced,
// wildcards included. OnInterestLost reports a subject that lost its last
// subscription, so that a parked request whose requester went away is
// dropped instead of swallowing messages. Publish names the matching queue
// groups, without which the hub hands a leaf's message to no queue
// subscriber.
//
// Failure model: a message is sent at most once. Publish fails at once
// (ErrNotConnected) while the connection is down; what sat in the buffer
// when a connection broke is lost, as on any broken connection (a JetStream
// delivery comes back after its ack wait). A first connection that fails
// is Dial's error.
//
// Accounts: a leaf connection binds the one account its user is bound to
// on the hub, sees that account's subscriptions only and reaches its
// inboxes only. Set holds one Conn per tenant (DialSet, from Logins:
// ParseLogins reads them as ACCOUNT=user:password,...), so that in the
// accounts mode each tenant's deliveries go into its own account: it
// publishes and answers Interested by tenant, and tells the interest lost
// with the tenant whose account lost it (an inbox name means nothing
// without its account). A Set's map is fixed once dialled; each Conn
// keeps itself connected.
//
// It imports nothing of the project but internal/tenancy (the tenant a
// Set is keyed by).
package leaf
