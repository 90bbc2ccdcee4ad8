package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The transactional publish load (-publish-tx, docs/publish.md): -clients
// connections to the log's database (-pg-dsn, where a bridge relays
// queen.publish) each run transactions that insert one business row of
// 200 bytes, in three shapes side by side, each for -duration:
//
//	plain    BEGIN; INSERT the row; COMMIT
//	publish  BEGIN; INSERT the row; SELECT queen.publish(...); COMMIT
//	outbox   BEGIN; INSERT the row; INSERT a row into an outbox table; COMMIT
//
// It reports transactions/s and PostgreSQL's CPU per transaction for each
// (publish's from its start until the bridge stored every message it
// published: the relay's decoding and the log's writes are PostgreSQL's
// work too), then, at half the publish shape's rate on a timetable,
// commit-to-stored: from a COMMIT's return until a poller sees the
// message's partition reach its offset. For that the transactions take
// their partition's next number under a row lock, so each partition's
// commit order is number order, which the relay keeps as offset order.

const businessRow = 200 // bytes of the business row's text

// publishShapes are the three transaction shapes, in the order they run.
var publishShapes = []string{"plain", "publish", "outbox"}

type shapeResult struct {
	shape string
	txs   int64
	rate  float64 // transactions/s
	pgCPU float64 // PostgreSQL CPU seconds per transaction (NaN: not local)
}

func runPublishTx(ctx context.Context, o options, out io.Writer) error {
	if o.pgDSN == "" {
		return errors.New("-publish-tx needs -pg-dsn: the log's database, relayed by a bridge")
	}
	pc, err := pgxpool.ParseConfig(o.pgDSN)
	if err != nil {
		return err
	}
	pc.MaxConns = int32(o.clients) + 2
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := publishSetup(ctx, pool, o); err != nil {
		return err
	}
	m := newMeter(ctx, o, out)
	defer m.close()
	queue := o.queuePrefix + "pub-" + o.run
	fmt.Fprintf(out, "publish-tx: %d connections, %d partitions of %s, payload %d bytes, %s a shape\n", o.clients, o.partitions, queue, o.payload, o.duration)
	var rows []shapeResult
	for _, shape := range publishShapes {
		r, err := runShape(ctx, pool, m, o, shape, queue)
		if err != nil {
			return fmt.Errorf("%s: %w", shape, err)
		}
		fmt.Fprintf(out, "%-8s %9.0f tx/s  postgres %s µs/tx\n", r.shape, r.rate, us(r.pgCPU))
		rows = append(rows, r)
	}
	plain, pub, outbox := rows[0], rows[1], rows[2]
	fmt.Fprintf(out, "ratios: publish/plain tx/s %.2f; postgres CPU per tx publish/plain %.2f, publish/outbox %.2f\n",
		pub.rate/plain.rate, pub.pgCPU/plain.pgCPU, pub.pgCPU/outbox.pgCPU)
	p50, p99, top, n, err := commitToStored(ctx, pool, o, queue+"-lat", pub.rate/2)
	if err != nil {
		return fmt.Errorf("commit-to-stored: %w", err)
	}
	fmt.Fprintf(out, "commit-to-stored at %.0f tx/s (half the publish shape's): p50 %s, p99 %s, max %s (%d messages)\n",
		pub.rate/2, p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), top.Round(10*time.Microsecond), n)
	return nil
}

// publishSetup makes the business table, the outbox table and the
// partitions' number rows; queen.publish must be there (a bridge relays
// the database).
func publishSetup(ctx context.Context, pool *pgxpool.Pool, o options) error {
	var ok bool
	if err := pool.QueryRow(ctx, `SELECT to_regprocedure('queen.publish(text,text,jsonb,text,text)') IS NOT NULL`).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return errors.New("queen.publish is not installed in -pg-dsn's database: no bridge relays it (docs/publish.md)")
	}
	_, err := pool.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS queen_bench;
		CREATE TABLE IF NOT EXISTS queen_bench.orders (id bigserial PRIMARY KEY, body text NOT NULL);
		CREATE TABLE IF NOT EXISTS queen_bench.outbox (id bigserial PRIMARY KEY, queue text NOT NULL, partition text NOT NULL,
			payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
		CREATE TABLE IF NOT EXISTS queen_bench.publish_seq (queue text, partition text, n bigint NOT NULL, PRIMARY KEY (queue, partition))`)
	return err
}

// runShape runs one shape for -duration as fast as the connections go.
func runShape(ctx context.Context, pool *pgxpool.Pool, m *meter, o options, shape, queue string) (shapeResult, error) {
	body := strings.Repeat("b", businessRow)
	payload := publishPayload(o.payload)
	before := m.sample()
	start := time.Now()
	stop := start.Add(o.duration)
	var txs atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, o.clients)
	for c := range o.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(stop) && ctx.Err() == nil; i++ {
				part := fmt.Sprintf("p%d", (c+i*o.clients)%o.partitions)
				err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					if _, err := tx.Exec(ctx, `INSERT INTO queen_bench.orders (body) VALUES ($1)`, body); err != nil {
						return err
					}
					var err error
					switch shape {
					case "publish":
						_, err = tx.Exec(ctx, `SELECT queen.publish($1, $2, $3::jsonb)`, queue, part, payload)
					case "outbox":
						_, err = tx.Exec(ctx, `INSERT INTO queen_bench.outbox (queue, partition, payload) VALUES ($1, $2, $3::jsonb)`, queue, part, payload)
					}
					return err
				})
				if err != nil {
					errs <- err
					return
				}
				txs.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return shapeResult{}, err
	}
	if shape == "publish" {
		// Until the bridge stored them all: their relaying is this
		// shape's cost.
		if err := waitStored(ctx, pool, queue, txs.Load(), time.Minute); err != nil {
			return shapeResult{}, err
		}
	}
	d := m.sample().minus(before)
	return shapeResult{shape: shape, txs: txs.Load(), rate: float64(txs.Load()) / elapsed.Seconds(), pgCPU: d.pg / float64(max(txs.Load(), 1))}, nil
}

// publishPayload is a JSON object of about n bytes.
func publishPayload(n int) string {
	const head = `{"order":1,"pad":""}`
	return `{"order":1,"pad":"` + strings.Repeat("x", max(n-len(head), 0)) + `"}`
}

// stored is how many messages queue holds.
func stored(ctx context.Context, pool *pgxpool.Pool, queue string) (int64, error) {
	var n int64
	err := pool.QueryRow(ctx, `SELECT coalesce(sum(p.last_offset), 0) FROM queen.log_partitions p
		JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1`, queue).Scan(&n)
	return n, err
}

// waitStored polls until queue holds want messages, within limit.
func waitStored(ctx context.Context, pool *pgxpool.Pool, queue string, want int64, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		n, err := stored(ctx, pool, queue)
		if err != nil {
			return err
		}
		if n >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d messages stored after %s: is a bridge relaying the database?", n, want, limit)
		}
		time.Sleep(5 * time.Millisecond) // polling the database, not waiting on a signal
	}
}

// commitToStored publishes at rate on a timetable for -duration and
// measures, per message, from its COMMIT's return until a poller sees its
// partition hold its offset.
func commitToStored(ctx context.Context, pool *pgxpool.Pool, o options, queue string, rate float64) (p50, p99, top time.Duration, n int, err error) {
	if rate <= 0 || math.IsNaN(rate) {
		return 0, 0, 0, 0, errors.New("no publish rate to halve")
	}
	if _, err := pool.Exec(ctx, `INSERT INTO queen_bench.publish_seq SELECT $1, 'p' || i, 0 FROM generate_series(0, $2 - 1) i
		ON CONFLICT DO NOTHING`, queue, o.partitions); err != nil {
		return 0, 0, 0, 0, err
	}
	sch, err := newSchedule(rate, 1, time.Now(), o.duration)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	type key struct {
		partition string
		n         int64
	}
	var mu sync.Mutex // guards committed: the publishing goroutines write, the poller reads
	committed := map[key]time.Time{}
	var lat []time.Duration // the poller's alone until it ends
	pollCtx, stopPoll := context.WithCancel(ctx)
	pollDone := make(chan error, 1)
	go func() { // owned by this function: stopped and waited for below
		seen := map[string]int64{}
		for {
			rows, err := pool.Query(pollCtx, `SELECT p.name, p.last_offset FROM queen.log_partitions p
				JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = $1`, queue)
			now := time.Now()
			if err == nil {
				for rows.Next() {
					var part string
					var last int64
					if err := rows.Scan(&part, &last); err != nil {
						break
					}
					mu.Lock()
					for k := seen[part] + 1; k <= last; k++ {
						if t, ok := committed[key{part, k}]; ok {
							lat = append(lat, now.Sub(t))
						}
					}
					mu.Unlock()
					seen[part] = last
				}
				rows.Close()
				err = rows.Err()
			}
			if pollCtx.Err() != nil {
				pollDone <- nil
				return
			}
			if err != nil {
				pollDone <- err
				return
			}
			time.Sleep(time.Millisecond) // the poll's period
		}
	}()
	payload := publishPayload(o.payload)
	body := strings.Repeat("b", businessRow)
	var total atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, o.clients)
	for range o.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i, due, ok := sch.take()
				if !ok {
					return
				}
				if _, ok := wait(ctx, due); !ok {
					return
				}
				part := fmt.Sprintf("p%d", i%int64(o.partitions))
				var num int64
				err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					if err := tx.QueryRow(ctx, `UPDATE queen_bench.publish_seq SET n = n + 1 WHERE queue = $1 AND partition = $2 RETURNING n`,
						queue, part).Scan(&num); err != nil {
						return err
					}
					if _, err := tx.Exec(ctx, `INSERT INTO queen_bench.orders (body) VALUES ($1)`, body); err != nil {
						return err
					}
					_, err := tx.Exec(ctx, `SELECT queen.publish($1, $2, $3::jsonb)`, queue, part, payload)
					return err
				})
				if err != nil {
					errs <- err
					return
				}
				at := time.Now()
				mu.Lock()
				committed[key{part, num}] = at
				mu.Unlock()
				total.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		stopPoll()
		<-pollDone
		return 0, 0, 0, 0, err
	}
	werr := waitStored(ctx, pool, queue, total.Load(), time.Minute)
	// One more round of the poller after everything is stored.
	time.Sleep(20 * time.Millisecond) // lets the poller's next round see the last offsets
	stopPoll()
	if perr := <-pollDone; perr != nil && werr == nil {
		werr = perr
	}
	if werr != nil {
		return 0, 0, 0, 0, werr
	}
	p50, p99, top = quantiles(lat)
	return p50, p99, top, len(lat), nil
}
