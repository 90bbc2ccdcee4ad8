package metrics_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/queenbridge/queenbridge/consume"
	"github.com/queenbridge/queenbridge/cursors"
	"github.com/queenbridge/queenbridge/durability"
	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/jetstream"
	"github.com/queenbridge/queenbridge/metrics"
	"github.com/queenbridge/queenbridge/ownership"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/queues"
	"github.com/queenbridge/queenbridge/readside"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/queenbridge/queenbridge/spool"
)

// bridge is the wiring a bridge gives the metrics: the rooms, fusion with
// the bundle hook, and the registry behind the handler.
type bridge struct {
	m        *metrics.Metrics
	db       *pgwire.DB
	fusion   *fusion.Fusion
	keeper   *durability.Keeper
	reads    *readside.Reads
	inflight atomic.Int64
}

func wire(t *testing.T) *bridge {
	t.Helper()
	ctx := context.Background()
	b := &bridge{db: newDB(t), m: metrics.New(prometheus.NewRegistry())}
	f, err := fusion.New(fusion.Config{Sink: b.db, OnBundle: b.m.FusionHook})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Stop(context.Background()) })
	b.fusion = f
	b.m.RegisterFusion(f)

	sp, err := spool.Open(spool.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sp.Close() })
	if b.keeper, err = durability.New(durability.Config{DB: b.db, Fusion: f, Spool: sp, MaintenancePoll: time.Hour, DrainInterval: 10 * time.Millisecond, RetentionInterval: -1}); err != nil {
		t.Fatal(err)
	}
	marks, err := cursors.NewMarks(b.db)
	if err != nil {
		t.Fatal(err)
	}
	if b.reads, err = readside.New(readside.Config{DB: b.db, DisableHotlist: true, Listener: marks}); err != nil {
		t.Fatal(err)
	}
	settings, err := queues.New(queues.Config{DB: b.db})
	if err != nil {
		t.Fatal(err)
	}
	router, err := ownership.New(ownership.Config{ID: "a", Fusion: f})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []interface {
		Start(context.Context) error
		Stop(context.Context) error
	}{b.keeper, b.reads, settings} {
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Stop(context.Background()) })
	}
	consumer, err := consume.New(consume.Config{DB: b.db, Reads: b.reads, Marks: marks, Payloads: settings, Maintenance: b.keeper.Maintenance, Observer: b.m})
	if err != nil {
		t.Fatal(err)
	}
	b.m.RegisterRooms(metrics.Rooms{InflightBodyBytes: b.inflight.Load, DB: b.db, Keeper: b.keeper, Reads: b.reads, Consumer: consumer,
		Queues: settings, Router: router})
	intake, err := jetstream.New(jetstream.Config{})
	if err != nil {
		t.Fatal(err)
	}
	b.m.RegisterJetStream(intake)
	return b
}

// submit writes frames through fusion and waits for their verdicts.
func (b *bridge) submit(t *testing.T, queue, partition string, txids ...string) {
	t.Helper()
	fs := make([]segment.Frame, len(txids))
	for i, tx := range txids {
		fs[i] = segment.Frame{ID: uuid.Must(uuid.NewV7()), TransactionID: tx, Payload: []byte(`{}`)}
	}
	done := make(chan []fusion.Verdict, 1)
	if err := b.fusion.Submit(context.Background(), fusion.Submission{Queue: queue, Partition: partition, Frames: fs, Done: func(v []fusion.Verdict) { done <- v }}); err != nil {
		t.Fatal(err)
	}
	for _, v := range <-done {
		if v.Status != fusion.Queued {
			t.Fatalf("submit: %+v", v)
		}
	}
}

// Every collector is exposed from the first scrape, at its starting value
// (those with labels once a label is used).
func TestFirstScrapeExposesEveryName(t *testing.T) {
	t.Parallel()
	b := wire(t)
	got := scrape(t, b.m)
	want(t, got, map[string]float64{
		"queen_batch_items_fired_total":                    0,
		"queen_fusion_commits_total":                       0,
		"queen_fusion_segments_total":                      0,
		"queen_fusion_bundle_errors_total":                 0,
		"queen_fusion_local_duplicates_total":              0,
		"queen_fusion_bundles_in_flight":                   0,
		"queen_fusion_pending_bytes":                       0,
		"queen_maintenance_mode_enabled":                   0,
		"queen_spool_pending_records":                      0,
		"queen_spool_pending_bytes":                        0,
		"queen_spool_skipped_bytes_total":                  0,
		"queen_spool_replayed_total":                       0,
		"queen_spool_drain_errors_total":                   0,
		"queen_hotlist_wakes_total":                        0,
		"queen_parked_reads":                               0,
		"queen_inflight_body_bytes":                        0,
		"queen_read_queries_total":                         0,
		"queen_available_published_total":                  0,
		"queen_available_received_total":                   0,
		"queen_queue_settings_received_total":              0,
		"queen_retention_segments_removed_total":           0,
		"queen_forward_groups_total":                       0,
		"queen_forward_requests_total":                     0,
		"queen_forward_received_groups_total":              0,
		"queen_forward_fallback_groups_total":              0,
		"queen_ownership_bucket_moves_total":               0,
		"queen_ownership_bridges":                          1,
		"queen_ownership_owned_buckets":                    1024,
		"queen_consumer_lease_expiries_total":              0,
		"queen_consumer_claims_total":                      0,
		"queen_consumer_delivered_total":                   0,
		"queen_consumer_dead_letters_total":                0,
		"queen_pg_statement_timeouts_total":                0,
		"queen_pg_quarantined_connections_total":           0,
		"queen_pg_migration_lock_waits_total":              0,
		"queen_jetstream_unacknowledged_total":             0,
		`queen_jetstream_messages_total{outcome="queued"}`: 0,
		`queen_jetstream_messages_total{outcome="failed"}`: 0,
		"queen_fusion_items_per_batch_count":               0,
		"queen_fusion_segments_per_batch_count":            0,
		"queen_forward_duration_seconds_count":             0,
	})
	for series := range got {
		if strings.HasPrefix(series, "queen_consumer_lag_messages") {
			t.Errorf("a lag before any group popped: %s", series)
		}
	}
}

// The front door's counters move with its calls.
func TestFrontDoorCounters(t *testing.T) {
	t.Parallel()
	b := wire(t)
	b.m.Request("http")
	b.m.Request("http")
	b.m.Request("nats")
	b.m.Items("queued", 5)
	b.m.Items("buffered", 2)
	b.m.Latency("http", 3*time.Millisecond)
	b.m.ForwardLatency(time.Millisecond)
	b.m.Popped(0)
	b.m.Popped(4)
	b.m.Popped(3)
	b.m.Acked("completed", true, false)
	b.m.Acked("failed", false, false)
	b.m.Acked("failed", true, true)
	want(t, scrape(t, b.m), map[string]float64{
		`queen_push_requests_total{transport="http"}`:                  2,
		`queen_push_requests_total{transport="nats"}`:                  1,
		`queen_push_items_total{status="queued"}`:                      5,
		`queen_push_items_total{status="buffered"}`:                    2,
		`queen_push_duration_seconds_count{transport="http"}`:          1,
		`queen_push_duration_seconds_sum{transport="http"}`:            0.003,
		"queen_forward_duration_seconds_count":                         1,
		`queen_consumer_pops_total{outcome="empty"}`:                   1,
		`queen_consumer_pops_total{outcome="delivered"}`:               2,
		"queen_consumer_delivered_total":                               7,
		`queen_consumer_acks_total{status="completed",success="true"}`: 1,
		`queen_consumer_acks_total{status="failed",success="false"}`:   1,
		`queen_consumer_acks_total{status="failed",success="true"}`:    1,
		"queen_consumer_dead_letters_total":                            1,
	})
}

// The collectors read the rooms' Stats at scrape time: fusion's writes,
// maintenance, the spool and its drain, parked reads and their wakes, the
// front door's in-flight bytes, and the consumer lag from the database.
func TestScrapeReadsTheRoomsNow(t *testing.T) {
	t.Parallel()
	b := wire(t)
	ctx := context.Background()

	// Fusion: three frames in one segment.
	b.submit(t, "q", "p", "a", "b", "c")
	testkit.WaitFor(t, "the bundle hook", time.Minute, func() bool { return scrape(t, b.m)["queen_fusion_items_per_batch_sum"] == 3 })
	got := scrape(t, b.m)
	want(t, got, map[string]float64{
		"queen_batch_items_fired_total":    3,
		"queen_fusion_segments_total":      1,
		"queen_fusion_commits_total":       1,
		"queen_fusion_bundle_errors_total": 0,
		"queen_fusion_pending_bytes":       0,
	})

	// Maintenance and the spool.
	if err := b.keeper.SetMaintenance(ctx, true); err != nil {
		t.Fatal(err)
	}
	fs := []segment.Frame{{ID: uuid.Must(uuid.NewV7()), TransactionID: "s1", Payload: []byte(`1`)}, {ID: uuid.Must(uuid.NewV7()), TransactionID: "s2", Payload: []byte(`2`)}}
	if err := b.keeper.Spool(ctx, [16]byte{}, []durability.Failed{{Queue: "q", Partition: "p", Frame: &fs[0]}, {Queue: "q", Partition: "p", Frame: &fs[1]}}); err != nil {
		t.Fatal(err)
	}
	got = scrape(t, b.m)
	want(t, got, map[string]float64{"queen_maintenance_mode_enabled": 1, "queen_spool_pending_records": 2})
	if got["queen_spool_pending_bytes"] <= 0 {
		t.Errorf("spool bytes %v with two records", got["queen_spool_pending_bytes"])
	}
	if err := b.keeper.SetMaintenance(ctx, false); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the drain", time.Minute, func() bool { return scrape(t, b.m)["queen_spool_replayed_total"] == 2 })
	want(t, scrape(t, b.m), map[string]float64{"queen_maintenance_mode_enabled": 0, "queen_spool_pending_records": 0, "queen_batch_items_fired_total": 5})

	// A parked read, then the announcement that wakes it.
	done := make(chan error, 1)
	go func() {
		_, err := b.reads.Fetch(ctx, [16]byte{}, readside.FetchRequest{Queue: "q", Partition: "p", From: 6, Limit: 10, MaxBytes: 1 << 20, Wait: time.Minute})
		done <- err
	}()
	testkit.WaitFor(t, "the read to park", time.Minute, func() bool {
		s := scrape(t, b.m)
		return s["queen_parked_reads"] == 1 && s["queen_read_queries_total"] == 2
	})
	b.submit(t, "q", "p", "d")
	b.reads.Announce([]readside.Key{{Queue: "q", Partition: "p"}})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want(t, scrape(t, b.m), map[string]float64{"queen_parked_reads": 0, "queen_hotlist_wakes_total": 1, "queen_read_queries_total": 3})

	// In-flight bytes, read from the front door's function.
	b.inflight.Store(12345)
	want(t, scrape(t, b.m), map[string]float64{"queen_inflight_body_bytes": 12345})

	// The lag of a group: 6 messages, 2 taken.
	if r, err := b.db.Pop(ctx, pgwire.PopRequest{Queue: "q", Partition: "p", Group: "g", AutoAck: true, Batch: 2}); err != nil || r.Status != pgwire.PopDelivered {
		t.Fatalf("pop: %+v %v", r, err)
	}
	lag := `queen_consumer_lag_messages{consumer_group="g",queue="q",tenant="00000000-0000-0000-0000-000000000000"}`
	want(t, scrape(t, b.m), map[string]float64{lag: 4})
	b.submit(t, "q", "p", "e")
	want(t, scrape(t, b.m), map[string]float64{lag: 5, "queen_batch_items_fired_total": 7})
}
