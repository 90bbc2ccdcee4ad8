package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/queenbridge/queenbridge/cursors"
	"github.com/queenbridge/queenbridge/jetstream"
)

// RegisterJSConsumers adds the JetStream pull consumers' collectors: the
// engine's deliveries, acknowledgements and their fused writes, the pulls
// parked and how they ended, and the forwards to owners.
func (m *Metrics) RegisterJSConsumers(e *cursors.JSEngine, f *jetstream.Forwards) {
	counter := func(name, help string, v func(cursors.Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v(e.Stats())) })
	}
	labelled := func(name, help, label, value string, v func(cursors.Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: prometheus.Labels{label: value}},
			func() float64 { return float64(v(e.Stats())) })
	}
	gauge := func(name, help string, v func(cursors.Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return v(e.Stats()) })
	}
	const acks = "Acknowledgements of JetStream consumers' deliveries taken by this bridge, by kind (ack, nak, term)."
	const ended = "JetStream pull requests that ended without their batch, by reason: expired (408), no_messages (404 to a no_wait request), interest_lost (the requester went away)."
	m.reg.MustRegister(
		counter("queen_js_deliveries_total", "Messages delivered to JetStream pull requests (redeliveries included).", func(s cursors.Stats) uint64 { return s.Deliveries }),
		counter("queen_js_redeliveries_total", "Messages delivered again (ack wait passed, NAK).", func(s cursors.Stats) uint64 { return s.Redeliveries }),
		labelled("queen_js_acks_total", acks, "kind", "ack", func(s cursors.Stats) uint64 { return s.Acks }),
		labelled("queen_js_acks_total", acks, "kind", "nak", func(s cursors.Stats) uint64 { return s.Naks }),
		labelled("queen_js_acks_total", acks, "kind", "term", func(s cursors.Stats) uint64 { return s.Terms }),
		counter("queen_js_dead_letters_total", "Messages JetStream consumers sent to the dead letters (max_deliver, +TERM).", func(s cursors.Stats) uint64 { return s.DeadLetters }),
		counter("queen_js_ack_commits_total", "Fused acknowledgement writes (one statement and one commit for many consumers and partitions).", func(s cursors.Stats) uint64 { return s.AckFlushes }),
		counter("queen_js_ack_commit_errors_total", "Fused acknowledgement writes that failed (their state is written again).", func(s cursors.Stats) uint64 { return s.AckFlushErrors }),
		counter("queen_js_ack_updates_total", "(consumer, partition) acknowledgement states the fused writes stored.", func(s cursors.Stats) uint64 { return s.AckUpdates }),
		counter("queen_js_heartbeats_total", "Idle heartbeats sent to parked JetStream pull requests.", func(s cursors.Stats) uint64 { return s.Heartbeats }),
		labelled("queen_js_pulls_ended_total", ended, "reason", "expired", func(s cursors.Stats) uint64 { return s.Expired }),
		labelled("queen_js_pulls_ended_total", ended, "reason", "no_messages", func(s cursors.Stats) uint64 { return s.NoMessages }),
		labelled("queen_js_pulls_ended_total", ended, "reason", "interest_lost", func(s cursors.Stats) uint64 { return s.InterestLost }),
		counter("queen_js_publish_errors_total", "Deliveries and statuses the leaf connection refused (not connected): a lost delivery comes back after its ack wait.",
			func(s cursors.Stats) uint64 { return s.PublishErrors }),
		gauge("queen_js_parked_pulls", "JetStream pull requests parked on this bridge.", func(s cursors.Stats) float64 { return float64(s.Parked) }),
		gauge("queen_js_consumers", "JetStream consumers live on this bridge (it owns them and they were used).", func(s cursors.Stats) float64 { return float64(s.Consumers) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "queen_js_forwards_sent_total", Help: "Pulls, acks and definition changes forwarded to the bridge that owns their consumer."},
			func() float64 { return float64(f.Stats().Sent) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "queen_js_forwards_taken_total", Help: "Forwards from other bridges taken by this one, their consumers' owner."},
			func() float64 { return float64(f.Stats().Taken) }),
	)
}
