package bridge_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/embedded"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
)

// storedTxids counts every stored frame of queue by transactionId.
func storedTxids(t testing.TB, n *node, queue string) map[string]int {
	t.Helper()
	return testkit.StoredTransactionIDs(t, n.db.Pool(), queue)
}

func waitUntil(t testing.TB, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	testkit.WaitFor(t, what, limit, cond)
}

// load pushes one-item requests with unique transactionIds from several
// goroutines until stopped, recording each item's status.
type load struct {
	mu       sync.Mutex
	statuses map[string]string
	counts   map[string]*atomic.Int64
	stop     atomic.Bool
	wg       sync.WaitGroup
}

func startLoad(n *node, queue string, workers int) *load {
	l := &load{statuses: map[string]string{}, counts: map[string]*atomic.Int64{}}
	for _, s := range []string{"queued", "buffered", "failed", "duplicate", "other"} {
		l.counts[s] = &atomic.Int64{}
	}
	for w := 0; w < workers; w++ {
		l.wg.Add(1)
		go func(w int) {
			defer l.wg.Done()
			for i := 0; !l.stop.Load(); i++ {
				tx := fmt.Sprintf("w%d-%d", w, i)
				status, out := n.post("/api/v1/push", []byte(items(item(queue, fmt.Sprintf("p%d", i%4), tx))))
				st := "other"
				if status == http.StatusCreated || status == http.StatusInternalServerError {
					if rs := decodeResults(n.t, out); len(rs) == 1 {
						st = rs[0].Status
					}
				}
				if _, ok := l.counts[st]; !ok {
					st = "other"
				}
				l.counts[st].Add(1)
				l.mu.Lock()
				l.statuses[tx] = st
				l.mu.Unlock()
			}
		}(w)
	}
	return l
}

func (l *load) finish() { l.stop.Store(true); l.wg.Wait() }

func (l *load) count(s string) int64 { return l.counts[s].Load() }

// checkExactlyOnce: every queued or buffered item is stored exactly once,
// nothing is stored twice, nothing failed.
func checkExactlyOnce(t *testing.T, n *node, l *load, queue string) {
	t.Helper()
	stored := storedTxids(t, n, queue)
	acked := 0
	for tx, st := range l.statuses {
		switch st {
		case "queued", "buffered":
			acked++
			if stored[tx] != 1 {
				t.Errorf("%s answered %s, stored %d times", tx, st, stored[tx])
			}
		default:
			t.Errorf("%s answered %s", tx, st)
		}
	}
	for tx, c := range stored {
		if c != 1 {
			t.Errorf("%s stored %d times", tx, c)
		}
	}
	t.Logf("%d pushed: %d queued, %d buffered, %d failed, %d other; %d stored, each once", len(l.statuses),
		l.count("queued"), l.count("buffered"), l.count("failed"), l.count("other"), len(stored))
	if acked != len(stored) {
		t.Errorf("%d acknowledged, %d stored", acked, len(stored))
	}
}

// ownPostgres is a PostgreSQL cluster of one test's own, which the test may
// stop (immediately, as a crash) and start again on the same port and data.
type ownPostgres struct {
	cfg embedded.Config
	pg  *embedded.Postgres
}

// startOwnPostgres starts one; it is stopped and removed when the test ends.
func startOwnPostgres(t *testing.T) *ownPostgres {
	t.Helper()
	dir, err := os.MkdirTemp("", "queen-fault-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // the cluster runs as postgres when we are root
		t.Fatal(err)
	}
	p := &ownPostgres{cfg: embedded.Config{DataDir: filepath.Join(dir, "pg"), NoSync: true}}
	p.start(t)
	p.cfg.Port = p.pg.Port()
	t.Cleanup(func() { p.pg.Stop(context.Background()) })
	return p
}

func (p *ownPostgres) DSN() string { return p.pg.DSN() }

func (p *ownPostgres) start(t *testing.T) {
	t.Helper()
	pg, err := embedded.StartPostgres(context.Background(), p.cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.pg = pg
}

func (p *ownPostgres) kill(t *testing.T) {
	t.Helper()
	if err := p.pg.StopImmediate(); err != nil {
		t.Fatal(err)
	}
}

// PostgreSQL stopped (immediate) and restarted under a steady push load:
// nothing fails, and after the drain every queued or buffered item is stored
// exactly once.
func TestPostgresStopAndRestartUnderLoad(t *testing.T) {
	pg := startOwnPostgres(t)
	n := newNode(t, nodeOpts{dsn: pg.DSN()})

	l := startLoad(n, "steady", 8)
	waitUntil(t, "load before the stop", 30*time.Second, func() bool { return l.count("queued") >= 200 })
	pg.kill(t)
	waitUntil(t, "items buffered while PostgreSQL is down", 30*time.Second, func() bool { return l.count("buffered") >= 100 })
	if status, _ := n.get("/health"); status != http.StatusServiceUnavailable {
		t.Errorf("/health answered %d with PostgreSQL down", status)
	}
	// The console's overview is answered from memory, PostgreSQL or not.
	if status, out := n.get("/api/v1/bridge/overview"); status != http.StatusOK || !strings.Contains(string(out), `"totals"`) {
		t.Errorf("the overview answered %d %s with PostgreSQL down", status, out)
	}
	pg.start(t)
	queuedBefore := l.count("queued")
	waitUntil(t, "load after the restart", 60*time.Second, func() bool { return l.count("queued") >= queuedBefore+200 })
	l.finish()
	waitUntil(t, "the spool to drain", 60*time.Second, func() bool { return n.sp.Stats().Records == 0 })
	checkExactlyOnce(t, n, l, "steady")
}

// A partition row held FOR UPDATE by another session: the push hits the
// statement timeout, its items come back buffered, the server is no longer
// running the statement, the metric counts it, and once the lock is released
// the drain stores them.
func TestStatementTimeoutBuffersAndDrains(t *testing.T) {
	n := newNode(t, nodeOpts{stmtTO: 300 * time.Millisecond})
	n.pushHTTP(items(item("locked", "p", "first")))
	ctx := context.Background()
	release := testkit.LockPartition(t, n.db.Pool().Config().ConnConfig.ConnString(), "p")
	rs := n.pushHTTP(items(item("locked", "p", "a"), item("locked", "p", "b")))
	for _, r := range rs {
		if r.Status != "buffered" || r.MessageID == "" {
			t.Fatalf("under a held lock: %+v", rs)
		}
	}
	if v := metricValue(t, n, "queen_pg_statement_timeouts_total"); v < 1 {
		t.Fatalf("statement timeouts metric %v", v)
	}
	// The drain keeps retrying the buffered items (each retry blocks on the
	// lock and is cancelled in turn), so "no backend still running the
	// cancelled statement" means: none runs past the timeout. Bundle
	// statements are found by pgwire.BundleTag, on whichever path they
	// went; one is first seen waiting for the lock, so that the tag is
	// known to find them. pg_stat_activity is read on a connection of its
	// own: inside the locker's transaction the statistics snapshot would
	// stay frozen. Look once the drain's retry has run into the lock and
	// been cancelled too.
	bundles := func(where string) int {
		var c int
		if err := n.db.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'
			  AND starts_with(query, $1) AND `+where, pgwire.BundleTag).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	waitUntil(t, "a bundle statement waiting for the lock", 30*time.Second, func() bool {
		return bundles(`wait_event_type = 'Lock'`) > 0
	})
	waitUntil(t, "a drain retry to time out as well", 30*time.Second, func() bool {
		return metricValue(t, n, "queen_pg_statement_timeouts_total") >= 2
	})
	for i := 0; i < 20; i++ {
		if stale := bundles(`clock_timestamp() - query_start > interval '1 second'`); stale != 0 {
			t.Fatalf("%d backends still run a bundle statement past the 300ms timeout", stale)
		}
		time.Sleep(50 * time.Millisecond)
	}
	release()
	waitUntil(t, "the drain to store the buffered items", 30*time.Second, func() bool { return n.sp.Stats().Records == 0 })
	stored := storedTxids(t, n, "locked")
	if stored["a"] != 1 || stored["b"] != 1 || stored["first"] != 1 {
		t.Fatalf("stored %v", stored)
	}
	// the buffered items kept the ids they were answered with
	for _, r := range rs {
		found := false
		for off := int64(1); off <= 3; off++ {
			if f := storedFrame(t, n, "locked", "p", off); f.TransactionID == r.TransactionID {
				found = strings.EqualFold(fmt.Sprintf("%x", f.ID), strings.ReplaceAll(r.MessageID, "-", ""))
			}
		}
		if !found {
			t.Fatalf("%s stored under another message id", r.TransactionID)
		}
	}
}

// Maintenance on: pushes are buffered and nothing reaches PostgreSQL; a
// second bridge on the same NATS and database switches too (with its own
// re-read disabled, only the broadcast can tell it); off: drained exactly once.
func TestMaintenanceBuffersThenDrainsOnce(t *testing.T) {
	dsn := ""
	first := newNode(t, nodeOpts{})
	dsn = first.db.Pool().Config().ConnConfig.ConnString()
	second := newNode(t, nodeOpts{dsn: dsn, prefix: first.prefix, poll: time.Hour})

	status, out := first.post("/api/v1/system/maintenance", []byte(`{"enabled": true}`))
	if status != http.StatusOK || !strings.Contains(string(out), `"maintenanceMode":true`) {
		t.Fatalf("enable: %d %s", status, out)
	}
	start := time.Now()
	waitUntil(t, "the second bridge to see maintenance on", 10*time.Second, func() bool {
		_, out := second.get("/api/v1/system/maintenance")
		return strings.Contains(string(out), `"maintenanceMode":true`)
	})
	t.Logf("second bridge switched %s after the first", time.Since(start).Round(time.Millisecond))

	var answered []result
	for i := 0; i < 20; i++ {
		via := first
		if i%2 == 1 {
			via = second
		}
		answered = append(answered, via.pushHTTP(items(item("maint", "p", fmt.Sprintf("m%d", i)), item("maint", "p", fmt.Sprintf("m%d", i))))...)
	}
	for i, r := range answered {
		if r.Status != "buffered" || (i%2 == 1 && r.MessageID != answered[i-1].MessageID) {
			t.Fatalf("result %d in maintenance: %+v", i, r)
		}
	}
	if c := first.count(`SELECT count(*) FROM queen.log_segments`); c != 0 {
		t.Fatalf("%d segments written in maintenance mode", c)
	}
	if v := metricValue(t, first, "queen_maintenance_mode_enabled"); v != 1 {
		t.Fatalf("maintenance gauge %v", v)
	}
	reply, err := second.nc.Request(first.prefix+".v1.maintenance", []byte(`{}`), 5*time.Second)
	if err != nil || !strings.Contains(string(reply.Data), `"maintenanceMode":true`) {
		t.Fatalf("NATS maintenance read: %s %v", reply.Data, err)
	}

	if status, out := second.post("/api/v1/system/maintenance", []byte(`{"enabled": false}`)); status != http.StatusOK {
		t.Fatalf("disable: %d %s", status, out)
	}
	waitUntil(t, "both spools to drain", 30*time.Second, func() bool {
		return first.sp.Stats().Records == 0 && second.sp.Stats().Records == 0
	})
	stored := storedTxids(t, first, "maint")
	if len(stored) != 20 {
		t.Fatalf("%d transactionIds stored, want 20: %v", len(stored), stored)
	}
	for tx, c := range stored {
		if c != 1 {
			t.Fatalf("%s stored %d times", tx, c)
		}
	}
}

// When the spool cannot take an item either, it is answered failed, saying why.
func TestSpoolFailureAnswersFailed(t *testing.T) {
	n := newNode(t, nodeOpts{spoolMax: 10})
	if _, err := n.db.Pool().Exec(context.Background(), `UPDATE queen.system_state SET value = '{"enabled": true}' WHERE key = 'maintenance'`); err != nil {
		t.Fatal(err)
	}
	if status, _ := n.post("/api/v1/system/maintenance", []byte(`{"enabled": true}`)); status != http.StatusOK {
		t.Fatal("enable maintenance")
	}
	status, out := n.post("/api/v1/push", []byte(items(item("full", "p", "x"))))
	rs := decodeResults(t, out)
	if status != http.StatusInternalServerError || rs[0].Status != "failed" || !strings.Contains(rs[0].Error, "spool write failed") {
		t.Fatalf("%d %s", status, out)
	}
}
