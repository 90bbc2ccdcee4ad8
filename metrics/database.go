package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/queenbridge/queenbridge/storage"
)

// Database is what the metrics read of the database room at scrape time:
// its failure counters and every consumer group's lag. *pgwire.DB
// satisfies it; the figures are storage's types, so metrics does not
// import the database room.
type Database interface {
	Stats() storage.Stats
	ConsumerLag(ctx context.Context) ([]storage.GroupLag, error)
}

// retryCollector reads the database calls run again because PostgreSQL
// asked for it (a deadlock, a serialization failure) or their connection
// was lost before they were sent, by statement, at scrape time.
type retryCollector struct {
	db   Database
	desc *prometheus.Desc
}

func newRetryCollector(db Database) *retryCollector {
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
