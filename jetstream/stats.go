package jetstream

import "sync/atomic"

// Outcomes of a message, the label values of the messages metric.
const (
	OutcomeQueued    = "queued"    // committed; answered with its offset
	OutcomeDuplicate = "duplicate" // its Nats-Msg-Id was stored before; nothing written
	OutcomeBuffered  = "buffered"  // fsynced in the spool, written later
	OutcomeRefused   = "refused"   // refused before anything was written (4xx, an unmapped account)
	OutcomeFailed    = "failed"    // neither written nor spooled, or not taken (shutting down, too busy)
)

// Outcomes lists every outcome, in a fixed order.
var Outcomes = []string{OutcomeQueued, OutcomeDuplicate, OutcomeBuffered, OutcomeRefused, OutcomeFailed}

// Stats are the intake's counters for the metrics.
type Stats struct {
	// Messages counts messages answered (or, without a reply subject,
	// settled) by outcome, keyed by the Outcome* values.
	Messages map[string]uint64
	// Unacknowledged counts messages that came without a reply subject (a
	// plain publish): handled alike, answered to nobody.
	Unacknowledged uint64
}

// counters are the live values behind Stats.
type counters struct {
	queued, duplicate, buffered, refused, failed atomic.Uint64
	unacknowledged                               atomic.Uint64
}

func (c *counters) of(outcome string) *atomic.Uint64 {
	switch outcome {
	case OutcomeQueued:
		return &c.queued
	case OutcomeDuplicate:
		return &c.duplicate
	case OutcomeBuffered:
		return &c.buffered
	case OutcomeRefused:
		return &c.refused
	}
	return &c.failed
}

// Stats returns a snapshot.
func (in *Intake) Stats() Stats {
	s := Stats{Messages: make(map[string]uint64, len(Outcomes)), Unacknowledged: in.n.unacknowledged.Load()}
	for _, o := range Outcomes {
		s.Messages[o] = in.n.of(o).Load()
	}
	return s
}
