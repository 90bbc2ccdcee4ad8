package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/embedded"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/publish"
	"github.com/queenbridge/queenbridge/segment"
	"github.com/rs/zerolog"
)

// publishing starts a bridge that relays its own database and waits until
// it reads the slot (queen.publish is installed then); it returns the node
// and a pool for the callers' own transactions.
func publishing(t *testing.T, o nodeOpts) (*node, *pgxpool.Pool) {
	t.Helper()
	if o.dsn == "" {
		o.dsn = testenv.NewDatabase(t)
	}
	o.publish = []publish.Source{{DSN: o.dsn}}
	n := newNode(t, o)
	waitReading(t, n)
	pool, err := pgxpool.New(context.Background(), o.dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return n, pool
}

func waitReading(t *testing.T, n *node) {
	t.Helper()
	testkit.WaitFor(t, "the relay to read the slot", 60*time.Second, func() bool {
		st := n.br.PublishStats()
		return len(st) == 1 && st[0].State == publish.StateReading
	})
}

// inTx runs fn in a transaction of the caller's and commits it.
func inTx(t *testing.T, pool *pgxpool.Pool, fn func(tx pgx.Tx) error) error {
	t.Helper()
	return pgx.BeginFunc(context.Background(), pool, fn)
}

func pub(tx pgx.Tx, queue, partition, payload, txid string) error {
	_, err := tx.Exec(context.Background(), `SELECT queen.publish($1, $2, $3::jsonb, nullif($4, ''))`, queue, partition, payload, txid)
	return err
}

// waitStored waits until every transactionId of want is stored in queue,
// then returns what is stored.
func waitStored(t *testing.T, n *node, queue string, want ...string) map[string]int {
	t.Helper()
	var got map[string]int
	testkit.WaitFor(t, fmt.Sprintf("%v stored", want), 60*time.Second, func() bool {
		got = testkit.StoredTransactionIDs(t, n.db.Pool(), queue)
		for _, w := range want {
			if got[w] == 0 {
				return false
			}
		}
		return true
	})
	return got
}

// What a committed transaction publishes is stored once; a rolled-back
// transaction stores nothing; a savepoint rolled back drops its messages
// only; a message without a transactionId gets one from its WAL position.
func TestPublishStoresWhatCommits(t *testing.T) {
	n, pool := publishing(t, nodeOpts{})
	if err := inTx(t, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(context.Background(), `CREATE TABLE orders (id int)`); err != nil {
			return err
		}
		return pub(tx, "orders", "p1", `{"order":1}`, "committed")
	}); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := pub(tx, "orders", "p1", `{"order":2}`, "rolled-back"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := inTx(t, pool, func(tx pgx.Tx) error {
		ctx := context.Background()
		if err := pub(tx, "orders", "p1", `{"order":3}`, "before-savepoint"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SAVEPOINT s`); err != nil {
			return err
		}
		if err := pub(tx, "orders", "p1", `{"order":4}`, "in-savepoint"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT s`); err != nil {
			return err
		}
		if err := pub(tx, "orders", "p1", `{"order":5}`, ""); err != nil { // no transactionId
			return err
		}
		return pub(tx, "orders", "p1", `{"order":6}`, "after-savepoint")
	}); err != nil {
		t.Fatal(err)
	}
	// Commit order: once the last is stored, everything before it is.
	got := waitStored(t, n, "orders", "after-savepoint")
	derived := ""
	for id, c := range got {
		if c != 1 {
			t.Errorf("%s stored %d times", id, c)
		}
		if strings.HasPrefix(id, "pg:") {
			derived = id
		}
	}
	for _, id := range []string{"committed", "before-savepoint", "after-savepoint"} {
		if got[id] != 1 {
			t.Errorf("%s: stored %d times, want once", id, got[id])
		}
	}
	if got["rolled-back"] != 0 || got["in-savepoint"] != 0 {
		t.Errorf("rolled back, yet stored: %v", got)
	}
	// Its index counts the transaction's messages that reached the WAL's
	// stream: the savepoint's are not among them.
	if len(got) != 4 || !strings.HasSuffix(derived, ":1") {
		t.Errorf("stored %v; want committed, before-savepoint, a WAL-derived id ending in the index :1, after-savepoint", got)
	}
	if st := n.br.PublishStats()[0]; st.Relayed != 4 {
		t.Errorf("relayed %d, want 4", st.Relayed)
	}
}

// Bad arguments raise an error naming the argument; the caller's
// transaction fails with it, and nothing it published is stored.
func TestPublishRefusesBadArguments(t *testing.T) {
	n, pool := publishing(t, nodeOpts{})
	cases := []struct {
		sql, arg string
	}{
		{`SELECT queen.publish('', 'p', '{}'::jsonb)`, "queue"},
		{`SELECT queen.publish(NULL, 'p', '{}'::jsonb)`, "queue"},
		{`SELECT queen.publish(repeat('q', 256), 'p', '{}'::jsonb)`, "queue"},
		{`SELECT queen.publish('q', '', '{}'::jsonb)`, "partition"},
		{`SELECT queen.publish('q', E'a\nb', '{}'::jsonb)`, "partition"},
		{`SELECT queen.publish('q', 'p', '{}'::jsonb, '')`, "transaction_id"},
		{`SELECT queen.publish('q', 'p', '{}'::jsonb, 'id', E'\x01')`, "trace_id"},
		{`SELECT queen.publish('q', 'p', NULL::bytea)`, "payload"},
	}
	for _, c := range cases {
		err := inTx(t, pool, func(tx pgx.Tx) error {
			if err := pub(tx, "bad", "p", `{"n":1}`, "published-before-"+c.arg); err != nil {
				return err
			}
			_, err := tx.Exec(context.Background(), c.sql)
			return err
		})
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || !strings.Contains(pe.Message, c.arg) || !strings.HasPrefix(pe.Message, "queen.publish: ") {
			t.Errorf("%s: got %v, want a PostgreSQL error naming %s", c.sql, err, c.arg)
		}
	}
	// A good one after them: once it is stored, nothing of the failed
	// transactions is.
	if err := inTx(t, pool, func(tx pgx.Tx) error { return pub(tx, "bad", "p", `{"n":2}`, "good") }); err != nil {
		t.Fatal(err)
	}
	if got := waitStored(t, n, "bad", "good"); len(got) != 1 {
		t.Errorf("stored %v; the failed transactions' messages must not be", got)
	}
}

// 64 transactions at once, each taking the next number of its partition
// under a row lock (so commit order is number order) and publishing it:
// each partition's offsets follow its numbers.
func TestPublishKeepsCommitOrderPerPartition(t *testing.T) {
	n, pool := publishing(t, nodeOpts{})
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE seq (p text PRIMARY KEY, n int NOT NULL);
		INSERT INTO seq SELECT 'p' || i, 0 FROM generate_series(0, 3) i`); err != nil {
		t.Fatal(err)
	}
	pool.Config().MaxConns = 64
	const workers, each = 64, 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				p := fmt.Sprintf("p%d", (w+i)%4)
				err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					var num int
					if err := tx.QueryRow(ctx, `UPDATE seq SET n = n + 1 WHERE p = $1 RETURNING n`, p).Scan(&num); err != nil {
						return err
					}
					return pub(tx, "ordered", p, fmt.Sprintf(`{"n":%d}`, num), fmt.Sprintf("%s-%d", p, num))
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var want []string
	for p := range 4 {
		want = append(want, fmt.Sprintf("p%d-%d", p, workers*each/4))
	}
	waitStored(t, n, "ordered", want...)
	for p := range 4 {
		part := fmt.Sprintf("p%d", p)
		nums := storedPayloadNumbers(t, n, "ordered", part)
		if len(nums) != workers*each/4 {
			t.Fatalf("%s: %d stored, want %d", part, len(nums), workers*each/4)
		}
		for i, v := range nums {
			if v != i+1 {
				t.Fatalf("%s: offset %d holds number %d, want %d (offsets must follow commit order): %v", part, i, v, i+1, nums)
			}
		}
	}
}

// Two bridges relay one database: one reads the slot, the other waits;
// when the first stops, the second takes over, and every message is
// stored once.
func TestPublishSlotTakenOverWhenItsReaderGoes(t *testing.T) {
	dsn := testenv.NewDatabase(t)
	a, pool := publishing(t, nodeOpts{dsn: dsn})
	b := newNode(t, nodeOpts{dsn: dsn, prefix: a.prefix, publish: []publish.Source{{DSN: dsn}}})
	testkit.WaitFor(t, "the second bridge to wait for the slot", 60*time.Second, func() bool {
		return b.br.PublishStats()[0].State == publish.StateStandby
	})
	for i := range 20 {
		if err := inTx(t, pool, func(tx pgx.Tx) error { return pub(tx, "handover", "p", `{}`, fmt.Sprintf("a-%d", i)) }); err != nil {
			t.Fatal(err)
		}
	}
	waitStored(t, a, "handover", "a-19")
	a.stop()
	waitReading(t, b)
	for i := range 20 {
		if err := inTx(t, pool, func(tx pgx.Tx) error { return pub(tx, "handover", "p", `{}`, fmt.Sprintf("b-%d", i)) }); err != nil {
			t.Fatal(err)
		}
	}
	got := waitStored(t, b, "handover", "b-19")
	if len(got) != 40 {
		t.Errorf("stored %d distinct, want 40: %v", len(got), got)
	}
	for id, c := range got {
		if c != 1 {
			t.Errorf("%s stored %d times", id, c)
		}
	}
}

// storedPayloadNumbers decodes the stored messages of one partition in
// offset order and returns each payload's "n".
func storedPayloadNumbers(t *testing.T, n *node, queue, partition string) []int {
	t.Helper()
	rows, err := n.db.Pool().Query(context.Background(), `SELECT s.payload FROM queen.log_segments s
		JOIN queen.log_partitions p ON p.id = s.partition_id JOIN queen.queues q ON q.id = p.queue_id
		WHERE q.name = $1 AND p.name = $2 ORDER BY s.base_offset`, queue, partition)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var blob []byte
		if err := rows.Scan(&blob); err != nil {
			t.Fatal(err)
		}
		frames, err := segment.UnpackAll(blob)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range frames {
			var p struct{ N int }
			if err := json.Unmarshal(f.Payload, &p); err != nil {
				t.Fatalf("payload %q: %v", f.Payload, err)
			}
			out = append(out, p.N)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// PostgreSQL crashes (an immediate stop: no shutdown checkpoint, so the
// slot may hand out again what it had confirmed) and starts again while
// transactions publish: every committed message is stored once.
func TestPublishSurvivesPostgresRestart(t *testing.T) {
	pg := startOwnPostgres(t)
	n, pool := publishing(t, nodeOpts{dsn: pg.DSN()})
	ctx := context.Background()
	var (
		mu        sync.Mutex // guards the lists: the publishing goroutine appends, the test reads after it ends
		committed []string   // transactionIds named by transactions that committed
		derived   int        // transactions without one that committed
		unknown   int        // COMMITs whose answer was lost with the connection
		stop      = make(chan struct{})
		wg        sync.WaitGroup
	)
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(committed) + derived }
	wg.Add(1)
	go func() { // owned by the test: it closes stop and waits
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			txid := ""
			if i%2 == 0 {
				txid = fmt.Sprintf("r-%d", i)
			}
			tx, err := pool.Begin(ctx)
			if err == nil {
				if err = pub(tx, "restarted", fmt.Sprintf("p%d", i%4), `{}`, txid); err != nil {
					_ = tx.Rollback(ctx)
				}
			}
			if err != nil {
				time.Sleep(10 * time.Millisecond) // PostgreSQL is down: a pause between attempts, not a wait on anything
				continue
			}
			err = tx.Commit(ctx)
			mu.Lock()
			switch {
			case err != nil:
				unknown++
			case txid != "":
				committed = append(committed, txid)
			default:
				derived++
			}
			mu.Unlock()
		}
	}()
	testkit.WaitFor(t, "messages relayed", 60*time.Second, func() bool { return len(storedTxids(t, n, "restarted")) >= 100 })
	pg.kill(t)
	before := count()
	pg.start(t)
	testkit.WaitFor(t, "transactions committed after the restart", 60*time.Second, func() bool { return count() >= before+100 })
	close(stop)
	wg.Wait()
	want := make(map[string]bool, len(committed))
	for _, id := range committed {
		want[id] = true
	}
	var stored map[string]int
	testkit.WaitFor(t, "every committed message stored", 90*time.Second, func() bool {
		stored = storedTxids(t, n, "restarted")
		for id := range want {
			if stored[id] == 0 {
				return false
			}
		}
		return len(stored) >= len(committed)+derived
	})
	for id, c := range stored {
		if c != 1 {
			t.Errorf("%s stored %d times", id, c)
		}
	}
	if len(stored) > len(committed)+derived+unknown {
		t.Errorf("%d stored; at most %d committed", len(stored), len(committed)+derived+unknown)
	}
	t.Logf("%d committed (%d before the crash, %d unanswered COMMITs), each stored once", len(committed)+derived, before, unknown)
}

// A slot that falls behind its bound (here: read by a connection that
// never confirms anything, while the database writes) is named on /health,
// which stays 200, and in the console's overview.
func TestPublishSlotBehindIsReported(t *testing.T) {
	dsn := testenv.NewDatabase(t)
	ctx := context.Background()
	// The slot's reader that never confirms: it holds the slot, so the
	// bridge waits as a standby and reads the slot's lag from PostgreSQL.
	db, err := pgwire.DatabaseOf(dsn)
	if err != nil {
		t.Fatal(err)
	}
	holder, err := pgwire.OpenSlot(ctx, dsn, pgwire.SlotName(db), func(string) (uint64, error) { return 0, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	n := newNode(t, nodeOpts{dsn: dsn, publish: []publish.Source{{DSN: dsn}}, pubLag: 64 << 10})
	testkit.WaitFor(t, "the bridge to wait for the slot", 60*time.Second, func() bool {
		return n.br.PublishStats()[0].State == publish.StateStandby
	})
	// WAL is the cluster's: other databases' writes move the lag too, so
	// the state is checked against the lag read with it, not against zero.
	if st := n.br.PublishStats()[0]; st.Behind != (st.LagBytes > 64<<10) {
		t.Fatalf("before the filler: behind %v with %d bytes of lag against a bound of %d", st.Behind, st.LagBytes, 64<<10)
	}
	if _, err := n.db.Pool().Exec(ctx, `CREATE TABLE filler AS SELECT g, repeat('x', 200) AS pad FROM generate_series(1, 5000) g`); err != nil {
		t.Fatal(err)
	}
	var health []byte
	testkit.WaitFor(t, "/health to name the slot", 60*time.Second, func() bool {
		var status int
		status, health = n.get("/health")
		return status == 200 && strings.Contains(string(health), `"publishBehind":["`)
	})
	var o struct {
		Publish []struct {
			Slot, State string
			Behind      bool
			LagBytes    int64
		}
	}
	_, out := n.get("/api/v1/bridge/overview")
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatal(err)
	}
	if len(o.Publish) != 1 || !o.Publish[0].Behind || o.Publish[0].State != publish.StateStandby || o.Publish[0].LagBytes <= 64<<10 {
		t.Fatalf("overview's publish: %s", out)
	}
	t.Logf("health: %s", health)
}

// logLines is a log writer the test reads while the bridge writes.
type logLines struct {
	mu  sync.Mutex // the relay's goroutine writes, the test reads
	buf strings.Builder
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Against a PostgreSQL without wal_level=logical the bridge says in one
// line what is missing, installs no queen.publish (a call fails instead of
// writing messages nobody reads), and serves everything else.
func TestPublishNotReadySaysWhatIsMissing(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil { // the cluster runs as postgres when we are root
		t.Fatal(err)
	}
	pg, err := embedded.StartPostgres(context.Background(), embedded.Config{DataDir: filepath.Join(dir, "pg"), NoSync: true,
		Settings: map[string]string{"wal_level": "replica"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Stop(context.Background()) })
	logs := &logLines{}
	n := newNode(t, nodeOpts{dsn: pg.DSN(), publish: []publish.Source{{DSN: pg.DSN()}}, logger: zerolog.New(logs)})
	testkit.WaitFor(t, "the relay to find the database not ready", 60*time.Second, func() bool {
		return n.br.PublishStats()[0].State == publish.StateNotReady
	})
	var lines []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "not ready for the publish relay") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "wal_level=logical (it is replica)") {
		t.Fatalf("want one line naming wal_level; the log:\n%s", logs)
	}
	if rs := n.pushHTTP(items(item("still", "p", "served"))); rs[0].Status != "queued" {
		t.Fatalf("a push while the relay is not ready: %+v", rs)
	}
	var exists bool
	if err := n.db.Pool().QueryRow(context.Background(),
		`SELECT to_regprocedure('queen.publish(text,text,jsonb,text,text)') IS NOT NULL`).Scan(&exists); err != nil || exists {
		t.Fatalf("queen.publish installed where nothing relays it (%v)", err)
	}
}
