package bridge

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/queenbridge/queenbridge/fusion"
)

// Metrics are the bridge's Prometheus collectors. Create them before fusion
// so that fusion's OnBundle hook can feed FusionHook.
type Metrics struct {
	reg          *prometheus.Registry
	requests     *prometheus.CounterVec
	items        *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	itemsPerBndl prometheus.Histogram
	segsPerBndl  prometheus.Histogram
}

// NewMetrics registers the bridge's own collectors on reg.
func NewMetrics(reg *prometheus.Registry) *Metrics {
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_push_requests_total", Help: "Push requests received, by transport.",
		}, []string{"transport"}),
		items: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "queen_push_items_total", Help: "Pushed items answered, by status.",
		}, []string{"status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "queen_push_duration_seconds", Help: "Push request latency, receipt to answer.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}, []string{"transport"}),
		itemsPerBndl: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "queen_fusion_items_per_batch", Help: "Frames written per fused commit.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14),
		}),
		segsPerBndl: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "queen_fusion_segments_per_batch", Help: "Partitions (segments) per fused commit.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10),
		}),
	}
	reg.MustRegister(m.requests, m.items, m.latency, m.itemsPerBndl, m.segsPerBndl)
	return m
}

// FusionHook is fusion.Config.OnBundle.
func (m *Metrics) FusionHook(info fusion.BundleInfo) {
	if info.Err == nil {
		m.itemsPerBndl.Observe(float64(info.Items))
		m.segsPerBndl.Observe(float64(info.Segments))
	}
}

// registerFusion exposes fusion's Stats snapshot, read at scrape time.
func (m *Metrics) registerFusion(f *fusion.Fusion) {
	counter := func(name, help string, v func(fusion.Stats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v(f.Stats())) })
	}
	gauge := func(name, help string, v func(fusion.Stats) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return v(f.Stats()) })
	}
	m.reg.MustRegister(
		counter("queen_batch_items_fired_total", "Frames sent to PostgreSQL by fusion.", func(s fusion.Stats) uint64 { return s.ItemsFired }),
		counter("queen_fusion_commits_total", "Fused bundles committed.", func(s fusion.Stats) uint64 { return s.Bundles - s.BundleErrors }),
		counter("queen_fusion_segments_total", "Segments (partition writes) sent.", func(s fusion.Stats) uint64 { return s.Segments }),
		counter("queen_fusion_bundle_errors_total", "Fused bundles that failed.", func(s fusion.Stats) uint64 { return s.BundleErrors }),
		counter("queen_fusion_local_duplicates_total", "Repeats answered from this bridge's recent hashes.", func(s fusion.Stats) uint64 { return s.LocalDuplicates }),
		gauge("queen_vegas_limit", "Current push-lane concurrency limit.", func(s fusion.Stats) float64 { return float64(s.VegasLimit) }),
		gauge("queen_fusion_bundles_in_flight", "Bundles between dispatch and commit.", func(s fusion.Stats) float64 { return float64(s.PermitsInUse) }),
		gauge("queen_fusion_pending_bytes", "Payload bytes accepted and not yet answered.", func(s fusion.Stats) float64 { return float64(s.PendingBytes) }),
	)
}

// registerBridge exposes the spool, maintenance and database failure paths.
func (m *Metrics) registerBridge(b *Bridge) {
	onOff := func() float64 {
		if b.maintenance.Load() {
			return 1
		}
		return 0
	}
	spoolStat := func(f func(s spoolStats) float64) func() float64 {
		return func() float64 {
			if b.cfg.Spool == nil {
				return 0
			}
			st := b.cfg.Spool.Stats()
			return f(spoolStats{records: st.Records, bytes: st.Bytes})
		}
	}
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "queen_maintenance_mode_enabled", Help: "1 while maintenance mode is on."}, onOff),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "queen_spool_pending_records", Help: "Records waiting in the spool."},
			spoolStat(func(s spoolStats) float64 { return float64(s.records) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "queen_spool_pending_bytes", Help: "Bytes of the spool files."},
			spoolStat(func(s spoolStats) float64 { return float64(s.bytes) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "queen_spool_replayed_total", Help: "Spooled records written (or found duplicate) by the drain."},
			func() float64 { return float64(b.replayed.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "queen_spool_drain_errors_total", Help: "Drain passes that stopped early."},
			func() float64 { return float64(b.drainErrors.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "queen_hotlist_wakes_total", Help: "Partition wake-ups of parked reads (at most one per partition per 5 ms tick with the hot-list on)."},
			func() float64 { return float64(b.parked.wakes.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "queen_parked_reads", Help: "Reads parked waiting for messages."},
			func() float64 { return float64(b.parked.n.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "queen_available_published_total", Help: "MESSAGE_AVAILABLE announcements sent to peers."},
			func() float64 { return float64(b.announced.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "queen_available_received_total", Help: "MESSAGE_AVAILABLE announcements received from peers."},
			func() float64 { return float64(b.peerAnnouncements.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "queen_queue_settings_received_total", Help: "Queue settings changes taken from peers."},
			func() float64 { return float64(b.queueSettings.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "queen_retention_segments_removed_total", Help: "Segments removed by retention."},
			func() float64 { return float64(b.retainedSegments.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "queen_pg_statement_timeouts_total", Help: "Bundle calls cancelled at the statement timeout."},
			func() float64 { return float64(b.cfg.DB.Stats().StatementTimeouts) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "queen_pg_quarantined_connections_total", Help: "Pooled connections destroyed after a cancelled statement."},
			func() float64 { return float64(b.cfg.DB.Stats().QuarantinedConnection) }),
	)
}

type spoolStats struct{ records, bytes int64 }
