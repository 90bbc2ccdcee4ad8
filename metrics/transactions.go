package metrics

import "github.com/prometheus/client_golang/prometheus"

// transactions counts Queen's transaction requests by outcome: committed,
// rolled_back (answered success false: aborted, rolled back, or of unknown
// outcome), refused (not attempted: 400, 503). Every outcome is exposed
// from the start, at 0.
func newTransactions() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "queen_transactions_total", Help: "Transaction requests (POST /api/v1/transaction, <prefix>.v1.transaction), by outcome: committed, rolled_back, refused.",
	}, []string{"outcome"})
	for _, o := range []string{"committed", "rolled_back", "refused"} {
		c.WithLabelValues(o)
	}
	return c
}

// Transaction counts one transaction request by outcome
// (consume.Observer).
func (m *Metrics) Transaction(outcome string) { m.transactions.WithLabelValues(outcome).Inc() }
