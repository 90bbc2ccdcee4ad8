package jetstream

import "sync/atomic"

// APIStats are the JetStream API's counters for the metrics.
type APIStats struct {
	Requests     uint64 // $JS.API requests taken, pull requests included
	Errors       uint64 // answered with an API error
	Unanswerable uint64 // requests without a reply subject, dropped
	Pulls        uint64 // pull requests (CONSUMER.MSG.NEXT) with a reply
	PullsRefused uint64 // of those, answered with a 400 or 503 status
	Acks         uint64 // acknowledgements handed to the engine
	AcksRefused  uint64 // acknowledgements not understood, or from no tenant
	AcksForeign  uint64 // $JS.ACK messages that are not this bridge's acks
}

// apiCounters are the live values behind APIStats.
type apiCounters struct {
	requests, errors, unanswerable, pulls, pullsRefused atomic.Uint64
	acks, acksRefused, acksForeign                      atomic.Uint64
}

// Stats returns a snapshot.
func (a *API) Stats() APIStats {
	return APIStats{
		Requests: a.n.requests.Load(), Errors: a.n.errors.Load(), Unanswerable: a.n.unanswerable.Load(),
		Pulls: a.n.pulls.Load(), PullsRefused: a.n.pullsRefused.Load(),
		Acks: a.n.acks.Load(), AcksRefused: a.n.acksRefused.Load(), AcksForeign: a.n.acksForeign.Load(),
	}
}
