package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/queenbridge/queenbridge/consume"
	"github.com/queenbridge/queenbridge/durability"
	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/jetstream"
	"github.com/queenbridge/queenbridge/ownership"
	"github.com/queenbridge/queenbridge/publish"
	"github.com/queenbridge/queenbridge/queues"
	"github.com/queenbridge/queenbridge/readside"
)

// Metrics are the bridge's Prometheus collectors. Create them before fusion
// so that fusion's OnBundle hook can feed FusionHook. Safe for concurrent use.
type Metrics struct {
	reg          *prometheus.Registry
	requests     *prometheus.CounterVec
	items        *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	itemsPerBndl prometheus.Histogram
	segsPerBndl  prometheus.Histogram
	forwardRTT   prometheus.Histogram
	consumers    consumers
	transactions *prometheus.CounterVec
}

// New registers the bridge's own collectors on reg.
func New(reg *prometheus.Registry) *Metrics {
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
		forwardRTT: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "queen_forward_duration_seconds", Help: "Forwards to a partition's owning bridge, sent to answered.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
	}
	m.consumers = newConsumers()
	m.transactions = newTransactions()
	reg.MustRegister(m.transactions)
	reg.MustRegister(m.requests, m.items, m.latency, m.itemsPerBndl, m.segsPerBndl, m.forwardRTT)
	reg.MustRegister(m.consumers.collectors()...)
	return m
}

// ForwardLatency is ownership.Config.OnForward.
func (m *Metrics) ForwardLatency(d time.Duration) { m.forwardRTT.Observe(d.Seconds()) }

// FusionHook is fusion.Config.OnBundle.
func (m *Metrics) FusionHook(info fusion.BundleInfo) {
	if info.Err == nil {
		m.itemsPerBndl.Observe(float64(info.Items))
		m.segsPerBndl.Observe(float64(info.Segments))
	}
}

// Request counts a push request received over transport.
func (m *Metrics) Request(transport string) { m.requests.WithLabelValues(transport).Inc() }

// Items counts n pushed items answered with status.
func (m *Metrics) Items(status string, n int) { m.items.WithLabelValues(status).Add(float64(n)) }

// Latency records a push request's time from receipt to answer.
func (m *Metrics) Latency(transport string, d time.Duration) {
	m.latency.WithLabelValues(transport).Observe(d.Seconds())
}

// Handler serves the registry's collectors in the Prometheus text format.
func (m *Metrics) Handler() http.Handler { return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}) }

// RegisterFusion exposes fusion's Stats snapshot, read at scrape time.
func (m *Metrics) RegisterFusion(f *fusion.Fusion) {
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
		gauge("queen_fusion_in_flight_limit", "Bundles that may be in flight at once now: 1 + floor(commit flush / a bundle call's working part), within its bounds.", func(s fusion.Stats) float64 { return float64(s.InFlightLimit) }),
		// The same value under its name from when the limit was a Vegas
		// estimator; dashboards built then read it. Deprecated, kept for one release.
		gauge("queen_vegas_limit", "Deprecated: queen_fusion_in_flight_limit under its old name.", func(s fusion.Stats) float64 { return float64(s.InFlightLimit) }),
		gauge("queen_commit_flush_seconds", "The database's commit flush, as last measured; the limit follows it.", func(s fusion.Stats) float64 { return s.FlushTime.Seconds() }),
		gauge("queen_bundle_call_seconds", "Moving average of one bundle's call to PostgreSQL.", func(s fusion.Stats) float64 { return s.BundleLatency.Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "queen_fusion_call_seconds_total",
			Help: "Time spent in bundle calls to PostgreSQL, summed over calls (commits and failed bundles)."},
			func() float64 { return f.Stats().Busy.Seconds() }),
		gauge("queen_fusion_bundles_in_flight", "Bundles between dispatch and commit.", func(s fusion.Stats) float64 { return float64(s.PermitsInUse) }),
		gauge("queen_fusion_pending_bytes", "Payload bytes accepted and not yet answered.", func(s fusion.Stats) float64 { return float64(s.PendingBytes) }),
	)
}

// Rooms are the parts whose counters RegisterRooms exposes.
type Rooms struct {
	// InflightBodyBytes reads the request bytes held in memory now.
	InflightBodyBytes func() int64
	DB                Database // *pgwire.DB
	Keeper            *durability.Keeper
	Reads             *readside.Reads
	Consumer          *consume.Consumer
	Queues            *queues.Settings
	Router            *ownership.Router

	// NATSTooLarge reads the NATS answers refused for passing max_payload;
	// nil: none.
	NATSTooLarge func() uint64
}

// RegisterRooms exposes the rooms' counters (spool, maintenance, reads,
// peers, retention) and the database failure paths, read at scrape time.
func (m *Metrics) RegisterRooms(b Rooms) {
	gauge := func(name, help string, v func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, v)
	}
	counter := func(name, help string, v func() uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v()) })
	}
	keeper := func() durability.Stats { return b.Keeper.Stats() }
	owners := func() ownership.Stats { return b.Router.Stats() }
	reads := func() readside.Stats { return b.Reads.Stats() }
	consumer := func() consume.Stats { return b.Consumer.Stats() }
	m.reg.MustRegister(
		gauge("queen_maintenance_mode_enabled", "1 while maintenance mode is on.", func() float64 {
			if keeper().Maintenance {
				return 1
			}
			return 0
		}),
		gauge("queen_spool_pending_records", "Records waiting in the spool.", func() float64 { return float64(keeper().SpoolRecords) }),
		gauge("queen_spool_pending_bytes", "Bytes of the spool files.", func() float64 { return float64(keeper().SpoolBytes) }),
		counter("queen_spool_skipped_bytes_total", "Damaged spool bytes passed over when the spool was opened (the records after them are kept).",
			func() uint64 { return uint64(keeper().SpoolSkipped) }),
		counter("queen_spool_replayed_total", "Spooled records written (or found duplicate) by the drain.", func() uint64 { return keeper().Replayed }),
		counter("queen_spool_drain_errors_total", "Drain passes that stopped early.", func() uint64 { return keeper().DrainErrors }),
		counter("queen_hotlist_wakes_total", "Partition wake-ups of parked reads (at most one per partition per 5 ms tick with the hot-list on).",
			func() uint64 { return reads().Wakes }),
		gauge("queen_parked_reads", "Reads parked waiting for messages.", func() float64 { return float64(reads().Parked) }),
		gauge("queen_inflight_body_bytes", "Request body bytes held in memory now (bounded by QUEEN_MAX_INFLIGHT_BYTES).",
			func() float64 { return float64(b.InflightBodyBytes()) }),
		counter("queen_read_queries_total", "Database reads made by fetches (a parked read makes one per wake that it heeds).", func() uint64 { return reads().Queries }),
		counter("queen_available_published_total", "MESSAGE_AVAILABLE announcements sent to peers.", func() uint64 { return reads().Announced }),
		counter("queen_available_received_total", "MESSAGE_AVAILABLE announcements received from peers.", func() uint64 { return reads().PeerAnnouncements }),
		counter("queen_message_deleted_received_total", "Message deletes received from peers; the JetStream consumers here dropped their copies in memory.",
			func() uint64 { return reads().PeerTombstones }),
		counter("queen_queue_settings_received_total", "Queue settings changes taken from peers.", func() uint64 { return b.Queues.Stats().SettingsReceived }),
		counter("queen_retention_segments_removed_total", "Segments removed by retention.", func() uint64 { return keeper().RetainedSegments }),
		counter("queen_forward_groups_total", "Partition groups sent to the bridge that owns them.", func() uint64 { return owners().GroupsForwarded }),
		counter("queen_forward_requests_total", "Forward messages sent (concurrent requests' groups for one owner share one).", func() uint64 { return owners().ForwardRequests }),
		counter("queen_forward_received_groups_total", "Partition groups other bridges forwarded to this one.", func() uint64 { return owners().GroupsReceived }),
		counter("queen_forward_fallback_groups_total", "Forwarded groups written here because their owner did not answer in time or refused.",
			func() uint64 { return owners().GroupsFallback }),
		counter("queen_ownership_bucket_moves_total", "Buckets whose owner changed, summed over membership changes.", func() uint64 { return owners().BucketMoves }),
		gauge("queen_ownership_bridges", "Live bridges, this one included.", func() float64 { return float64(owners().Bridges) }),
		gauge("queen_ownership_owned_buckets", "Buckets this bridge owns.", func() float64 { return float64(owners().OwnedBuckets) }),
		counter("queen_consumer_lease_expiries_total", "Partition claims that took over an expired lease (its messages after the cursor delivered again).",
			func() uint64 { return consumer().LeaseExpiries }),
		counter("queen_consumer_claims_total", "Partition claims tried by pops.", func() uint64 { return consumer().Claims }),
		counter("queen_consumer_pops_too_large_total", "Pops refused because a message they claimed is larger than a NATS answer carries (max_payload); the claim was handed back.",
			func() uint64 { return consumer().TooLarge }),
		counter("queen_consumer_released_total", "Partition deliveries handed back without reaching a consumer: too large to answer, or the requester gone or cancelled.",
			func() uint64 { return consumer().Released }),
		counter("queen_consumer_pop_cancels_total", "Pop cancels (<prefix>.v1.pop.cancel) that reached their pop.", func() uint64 { return consumer().Cancels }),
		counter("queen_nats_answers_too_large_total", "NATS answers refused because they would pass max_payload (a read or dead-letter page), answered 413 instead.",
			func() uint64 {
				if b.NATSTooLarge == nil {
					return 0
				}
				return b.NATSTooLarge()
			}),
		counter("queen_consumer_whole_acks_total", "Whole-batch acknowledgements applied as one cursor move (no segment read).",
			func() uint64 { return consumer().WholeAcks }),
		counter("queen_tail_hits_total", "Pops served from the hot tail in memory: a claim and no segment read.", func() uint64 { return consumer().Tail.Hits }),
		counter("queen_tail_misses_total", "Pops the hot tail held the partition of but could not serve (cursor moved elsewhere, retention, options); they read PostgreSQL.",
			func() uint64 { return consumer().Tail.Misses }),
		counter("queen_tail_js_reads_total", "JetStream consumer reads served from the hot tail in memory instead of a segment read.",
			func() uint64 { return consumer().Tail.JSReads }),
		gauge("queen_tail_bytes", "Memory the hot tail holds (QUEEN_TAIL_CACHE_BYTES bounds it).", func() float64 { return float64(consumer().Tail.Bytes) }),
		newLagCollector(b.DB),
		counter("queen_pg_statement_timeouts_total", "Bundle calls cancelled at the statement timeout.", func() uint64 { return b.DB.Stats().StatementTimeouts }),
		counter("queen_pg_quarantined_connections_total", "Pooled connections destroyed after a cancelled statement.",
			func() uint64 { return b.DB.Stats().QuarantinedConnection }),
		newRetryCollector(b.DB),
		counter("queen_pg_migration_lock_waits_total", "Migration steps that gave up waiting for a lock (lock_timeout) and were tried again.",
			func() uint64 { return b.DB.Stats().MigrationLockWaits }),
	)
}

// RegisterPublish exposes the publish relay's figures per watched
// database, read at scrape time.
func (m *Metrics) RegisterPublish(r *publish.Relay) {
	for i, st := range r.Stats() {
		labels := prometheus.Labels{"database": st.Database}
		of := func() publish.SourceStats { return r.Stats()[i] }
		m.reg.MustRegister(
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "queen_publish_relayed_total", ConstLabels: labels,
				Help: "queen.publish messages this bridge pushed from the database's slot (stored, or found stored by a replay)."},
				func() float64 { return float64(of().Relayed) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "queen_publish_skipped_total", ConstLabels: labels,
				Help: "queen.publish messages whose content this bridge could not read: logged, not stored."},
				func() float64 { return float64(of().Skipped) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "queen_publish_lag_bytes", ConstLabels: labels,
				Help: "WAL between the server's end and the slot's confirmed position (from pg_replication_slots while another bridge or nobody reads it)."},
				func() float64 { return float64(of().LagBytes) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "queen_publish_lag_seconds", ConstLabels: labels,
				Help: "Age of the oldest committed transaction this bridge read from the slot and has not stored yet."},
				func() float64 { return of().Lag.Seconds() }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "queen_publish_reading", ConstLabels: labels,
				Help: "1 while this bridge holds the database's slot and relays it."},
				func() float64 {
					if of().State == publish.StateReading {
						return 1
					}
					return 0
				}),
		)
	}
}

// RegisterJetStream exposes the JetStream intake's counters, read at
// scrape time: messages by outcome, and those that came without a reply
// subject.
func (m *Metrics) RegisterJetStream(in *jetstream.Intake) {
	for _, o := range jetstream.Outcomes {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "queen_jetstream_messages_total", Help: "JetStream publishes taken on the streams' subjects, by outcome.",
			ConstLabels: prometheus.Labels{"outcome": o},
		}, func() float64 { return float64(in.Stats().Messages[o]) }))
	}
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "queen_jetstream_unacknowledged_total", Help: "JetStream-stream messages that came without a reply subject (a plain publish): stored alike, answered to nobody.",
	}, func() float64 { return float64(in.Stats().Unacknowledged) }))
}
