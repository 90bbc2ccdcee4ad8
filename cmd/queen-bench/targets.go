package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
)

func newTarget(ctx context.Context, o options) (target, error) {
	switch o.target {
	case "bridge":
		b, err := newBridgeTarget(o)
		if b != nil {
			b.mint = o.mint
		}
		return b, err
	case "direct", "partitioned", "batch":
		if o.pgDSN == "" {
			return nil, fmt.Errorf("-target %s needs -pg-dsn", o.target)
		}
		return newBaseline(ctx, o)
	}
	return nil, fmt.Errorf("-target must be bridge, direct, partitioned or batch, got %q", o.target)
}

// bridgeTarget pushes to queen-bridge over NATS or HTTP.
type bridgeTarget struct {
	send    func(subject string, body []byte) ([]byte, error) // subject "": the shared one
	closeFn func()
	mint    bool    // leave transactionId out
	owners  *owners // -aware: each part to its owner's own subject
}

func (b *bridgeTarget) push(_ context.Context, _ int, items []item) (map[string]int64, error) {
	if b.owners == nil {
		return b.pushTo("", items)
	}
	parts := b.owners.split(items)
	if len(parts) == 1 {
		for subject, its := range parts {
			return b.pushTo(subject, its)
		}
	}
	total := map[string]int64{}
	for subject, its := range parts {
		counts, err := b.pushTo(subject, its)
		if err != nil {
			return nil, err
		}
		for k, v := range counts {
			total[k] += v
		}
	}
	return total, nil
}

// pushTo sends one push of items on subject ("": the shared one).
func (b *bridgeTarget) pushTo(subject string, items []item) (map[string]int64, error) {
	body := make([]byte, 0, 64+len(items)*(96+len(items[0].payload)))
	body = append(body, `{"items":[`...)
	for k, it := range items {
		if k > 0 {
			body = append(body, ',')
		}
		body = strconv.AppendQuote(append(body, `{"queue":`...), it.queue)
		body = strconv.AppendQuote(append(body, `,"partition":`...), it.partition)
		if !b.mint {
			body = strconv.AppendQuote(append(body, `,"transactionId":`...), it.txid)
		}
		body = append(append(append(body, `,"payload":`...), it.payload...), '}')
	}
	body = append(body, `]}`...)
	out, err := b.send(subject, body)
	if subject != "" && errors.Is(err, nats.ErrNoResponders) {
		b.owners.fallbacks.Add(int64(len(items)))
		out, err = b.send("", body)
	}
	if err != nil {
		return nil, err
	}
	return countStatuses(out)
}

// countStatuses counts the items of a push answer by status. It finds each
// "status":"…" pair rather than decoding the whole answer: inside a JSON
// string those quotes would be escaped, so every match is a status field.
func countStatuses(answer []byte) (map[string]int64, error) {
	if len(answer) == 0 || answer[0] != '[' {
		return nil, fmt.Errorf("answer is not a result array: %.80q", answer)
	}
	counts := map[string]int64{}
	key := []byte(`"status":"`)
	for rest := answer; ; {
		i := bytes.Index(rest, key)
		if i < 0 {
			return counts, nil
		}
		rest = rest[i+len(key):]
		j := bytes.IndexByte(rest, '"')
		if j < 0 {
			return nil, fmt.Errorf("answer has an unterminated status: %.80q", answer)
		}
		counts[string(rest[:j])]++
		rest = rest[j:]
	}
}

func newBridgeTarget(o options) (*bridgeTarget, error) {
	switch o.transport {
	case "nats":
		nc, err := nats.Connect(o.natsURL, nats.Name("queen-bench"))
		if err != nil {
			return nil, err
		}
		shared := o.prefix + ".v1.push"
		t := &bridgeTarget{send: func(subject string, b []byte) ([]byte, error) {
			if subject == "" {
				subject = shared
			}
			m, err := nc.Request(subject, b, 30*time.Second)
			if err != nil {
				return nil, err
			}
			if code := m.Header.Get("Nats-Service-Error-Code"); code != "" {
				return nil, fmt.Errorf("error %s: %s", code, m.Header.Get("Nats-Service-Error"))
			}
			return m.Data, nil
		}, closeFn: nc.Close}
		if o.aware {
			ow, err := newOwners(nc, o.prefix)
			if err != nil {
				nc.Close()
				return nil, err
			}
			t.owners = ow
		}
		return t, nil
	case "http":
		if o.aware {
			return nil, errors.New("-aware needs -transport nats")
		}
		switch o.httpClient {
		case "lean":
			lh := newLeanHTTP(o.httpAddr, o.clients)
			return &bridgeTarget{send: func(_ string, b []byte) ([]byte, error) { return lh.send(b) }, closeFn: lh.close}, nil
		case "", "net":
		default:
			return nil, fmt.Errorf("-http-client must be net or lean, got %q", o.httpClient)
		}
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.clients}}
		url := "http://" + o.httpAddr + "/api/v1/push"
		return &bridgeTarget{send: func(_ string, b []byte) ([]byte, error) {
			resp, err := client.Post(url, "application/json", bytes.NewReader(b))
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			out, err := io.ReadAll(resp.Body)
			if err == nil && resp.StatusCode != http.StatusCreated {
				err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, out)
			}
			return out, err
		}, closeFn: client.CloseIdleConnections}, nil
	}
	return nil, fmt.Errorf("transport must be nats or http, got %q", o.transport)
}

func (b *bridgeTarget) close() { b.closeFn() }

// baseline writes straight into PostgreSQL, in tables of its own schema
// (queen_bench), one connection per client.
type baseline struct {
	kind string
	pool *pgxpool.Pool
}

// baselineSchema is made once per run; the tables are emptied so that every
// run starts alike.
const baselineSchema = `
CREATE SCHEMA IF NOT EXISTS queen_bench;
CREATE TABLE IF NOT EXISTS queen_bench.messages (
    id bigserial PRIMARY KEY, queue text NOT NULL, partition text NOT NULL,
    transaction_id text NOT NULL, payload bytea NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS queen_bench.partitions (
    id serial PRIMARY KEY, queue text NOT NULL, partition text NOT NULL, last_offset bigint NOT NULL DEFAULT 0,
    UNIQUE (queue, partition)) WITH (fillfactor = 70);
CREATE TABLE IF NOT EXISTS queen_bench.log (
    partition_id integer NOT NULL, "offset" bigint NOT NULL, transaction_id text NOT NULL, payload bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (partition_id, "offset"));
TRUNCATE queen_bench.messages, queen_bench.partitions, queen_bench.log;`

const (
	directSQL = `INSERT INTO queen_bench.messages (queue, partition, transaction_id, payload) VALUES ($1, $2, $3, $4)`
	// The naive partitioned log: move the partition's offset, insert the
	// message at it, one commit (the statement's own).
	partitionedSQL = `WITH p AS (UPDATE queen_bench.partitions SET last_offset = last_offset + 1
		WHERE queue = $1 AND partition = $2 RETURNING id, last_offset)
		INSERT INTO queen_bench.log (partition_id, "offset", transaction_id, payload) SELECT p.id, p.last_offset, $3, $4 FROM p`
	batchSQL = `INSERT INTO queen_bench.messages (queue, partition, transaction_id, payload)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[])`
)

func newBaseline(ctx context.Context, o options) (*baseline, error) {
	cfg, err := pgxpool.ParseConfig(o.pgDSN)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns, cfg.MinConns = int32(o.clients), int32(o.clients)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := pool.Exec(ctx, baselineSchema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("baseline tables: %w", err)
	}
	if o.target == "partitioned" {
		// every partition exists before the load, as a log's would
		_, err := pool.Exec(ctx, `INSERT INTO queen_bench.partitions (queue, partition)
			SELECT 'bench.q' || (g % $2), 'p' || g FROM generate_series(0, $1 - 1) g`, o.partitions, o.queues)
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("baseline partitions: %w", err)
		}
	}
	return &baseline{kind: o.target, pool: pool}, nil
}

func (b *baseline) push(ctx context.Context, _ int, items []item) (map[string]int64, error) {
	switch b.kind {
	case "batch":
		qs, ps, ts, pl := make([]string, len(items)), make([]string, len(items)), make([]string, len(items)), make([][]byte, len(items))
		for k, it := range items {
			qs[k], ps[k], ts[k], pl[k] = it.queue, it.partition, it.txid, it.payload
		}
		if _, err := b.pool.Exec(ctx, batchSQL, qs, ps, ts, pl); err != nil {
			return nil, err
		}
	default:
		sql := directSQL
		if b.kind == "partitioned" {
			sql = partitionedSQL
		}
		for _, it := range items {
			tag, err := b.pool.Exec(ctx, sql, it.queue, it.partition, it.txid, it.payload)
			if err != nil {
				return nil, err
			}
			if tag.RowsAffected() != 1 {
				return nil, fmt.Errorf("%s: %d rows written for one message", b.kind, tag.RowsAffected())
			}
		}
	}
	return map[string]int64{"queued": int64(len(items))}, nil
}

func (b *baseline) close() { b.pool.Close() }
