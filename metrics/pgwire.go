package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/queenbridge/queenbridge/pgwire"
)

// retryCollector reads the database calls run again because PostgreSQL
// asked for it (a deadlock, a serialization failure) or their connection
// was lost before they were sent, by statement, at scrape time.
type retryCollector struct {
	db   *pgwire.DB
	desc *prometheus.Desc
}

func newRetryCollector(db *pgwire.DB) *retryCollector {
	return &retryCollector{db: db, desc: prometheus.NewDesc("queen_pg_statement_retries_total",
		"Database calls run again after a deadlock, a serialization failure or a connection lost before sending, by statement.",
		[]string{"statement"}, nil)}
}

func (c *retryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *retryCollector) Collect(ch chan<- prometheus.Metric) {
	for name, n := range c.db.Stats().Retries {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n), name)
	}
}
