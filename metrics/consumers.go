package metrics

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
)

// consumers are the collectors of Queen's consumer API: pops and the
// messages they delivered, acknowledgements by status and outcome, dead
// letters; lease expiries come from the read side (RegisterRooms), the lag
// per queue and group from the database at scrape time (lagCollector).
type consumers struct {
	pops      *prometheus.CounterVec
	delivered prometheus.Counter
	acks      *prometheus.CounterVec
	dead      prometheus.Counter
}

func newConsumers() consumers {
	return consumers{
		pops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_consumer_pops_total", Help: "Pop requests answered, by outcome (delivered, empty).",
		}, []string{"outcome"}),
		delivered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "queen_consumer_delivered_total", Help: "Messages delivered by pops (redeliveries included).",
		}),
		acks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_consumer_acks_total", Help: "Acknowledgements, by status and whether they succeeded.",
		}, []string{"status", "success"}),
		dead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "queen_consumer_dead_letters_total", Help: "Messages written to the dead letters.",
		}),
	}
}

func (c consumers) collectors() []prometheus.Collector {
	return []prometheus.Collector{c.pops, c.delivered, c.acks, c.dead}
}

// Popped counts one pop answered with n messages.
func (m *Metrics) Popped(n int) {
	if n == 0 {
		m.consumers.pops.WithLabelValues("empty").Inc()
		return
	}
	m.consumers.pops.WithLabelValues("delivered").Inc()
	m.consumers.delivered.Add(float64(n))
}

// Acked counts one acknowledgement.
func (m *Metrics) Acked(status string, ok, dead bool) {
	success := "true"
	if !ok {
		success = "false"
	}
	m.consumers.acks.WithLabelValues(status, success).Inc()
	if dead {
		m.consumers.dead.Inc()
	}
}

// lagCollector reads every consumer group's lag (the partitions' last
// offsets minus its cursors, summed per queue) at scrape time.
type lagCollector struct {
	db   Database
	desc *prometheus.Desc
}

func newLagCollector(db Database) *lagCollector {
	return &lagCollector{db: db, desc: prometheus.NewDesc("queen_consumer_lag_messages",
		"Messages after a consumer group's cursors: high-water marks minus cursors, summed over the queue's partitions.",
		[]string{"tenant", "queue", "consumer_group"}, nil)}
}

func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	lags, err := c.db.ConsumerLag(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for _, l := range lags {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(l.Lag), uuid.UUID(l.Tenant).String(), l.Queue, l.Group)
	}
}
