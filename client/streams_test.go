package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/client"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// total is the state a test's streaming query keeps: a sum and a count of
// the values it consumed.
type total struct {
	Sum   int `json:"sum"`
	Count int `json:"count"`
}

// cycleBatch runs one cycle as Queen's SDK does: read the partition's
// state, fold the batch into it, push one sink item per message (its
// transactionId derived from the source's) and acknowledge the last
// message, all in one commit.
func cycleBatch(ctx context.Context, c *client.Client, query, group, sink string, msgs []client.Message) (*client.CycleResult, error) {
	rows, err := c.StreamState(ctx, client.StateQuery{QueryID: query, PartitionID: msgs[0].PartitionID, Keys: []string{"total"}})
	if err != nil {
		return nil, err
	}
	var st total
	if len(rows) == 1 {
		if err := json.Unmarshal(rows[0].Value, &st); err != nil {
			return nil, err
		}
	}
	cy := client.Cycle{QueryID: query, PartitionID: msgs[0].PartitionID, Group: group, Ack: &msgs[len(msgs)-1], Count: len(msgs)}
	for _, m := range msgs {
		var v int
		if err := json.Unmarshal(m.Data, &v); err != nil {
			return nil, err
		}
		st.Sum, st.Count = st.Sum+v, st.Count+1
		cy.Push = append(cy.Push, client.Item{Queue: sink, Partition: m.Partition, Payload: m.Data, TransactionID: "out-" + m.TransactionID})
	}
	cy.State = []client.StateOp{{Key: "total", Value: st}}
	return c.CommitCycle(ctx, cy)
}

// Over both transports: a query registers (again with the same hash, then
// refused with another unless reset), and a cycle commits its state, its
// sink pushes and its source acknowledgement together; sent again (a lost
// answer), it fails and writes nothing twice.
func TestCommitCycle(t *testing.T) {
	b := newBridge(t, bridgeBinary(t))
	nc, err := nats.Connect(testenv.NATSURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for _, cfg := range []client.Config{{HTTPURL: "http://" + b.http}, {NATS: nc, Prefix: b.prefix}} {
		via := "http"
		if cfg.NATS != nil {
			via = "nats"
		}
		c, err := client.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		src, sink := "src-"+via, "sink-"+via
		for i := 1; i <= 3; i++ {
			if _, err := c.Push(ctx, client.Item{Queue: src, Payload: json.RawMessage(fmt.Sprint(i))}); err != nil {
				t.Fatal(err)
			}
		}
		q := client.StreamQuery{Name: "totals-" + via, Source: src, Sink: sink, ConfigHash: "h1"}
		reg, err := c.RegisterStream(ctx, q)
		if err != nil || !reg.Fresh || reg.QueryID == "" {
			t.Fatalf("%s: register: %+v %v", via, reg, err)
		}
		if again, err := c.RegisterStream(ctx, q); err != nil || again.Fresh || again.QueryID != reg.QueryID {
			t.Fatalf("%s: register again: %+v %v", via, again, err)
		}
		q.ConfigHash = "h2"
		var refused *client.RequestError
		if _, err := c.RegisterStream(ctx, q); !errors.As(err, &refused) || refused.Status != http.StatusConflict {
			t.Fatalf("%s: another hash: %v", via, err)
		}
		msgs, err := c.Pop(ctx, src, "agg", client.ConsumeOptions{Batch: 10, Wait: time.Second})
		if err != nil || len(msgs) != 3 {
			t.Fatalf("%s: pop: %d %v", via, len(msgs), err)
		}
		res, err := cycleBatch(ctx, c, reg.QueryID, "agg", sink, msgs)
		if err != nil || res.StateOps != 1 || len(res.Pushes) != 3 || res.Pushes[2].Offset != 3 || res.Ack == nil || !res.Ack.LeaseReleased || res.Queue != src {
			t.Fatalf("%s: cycle: %+v %v", via, res, err)
		}
		if _, err := cycleBatch(ctx, c, reg.QueryID, "agg", sink, msgs); !errors.As(err, new(*client.TxnError)) {
			t.Fatalf("%s: replayed cycle: %v", via, err)
		}
		rows, err := c.StreamState(ctx, client.StateQuery{QueryID: reg.QueryID, PartitionID: msgs[0].PartitionID})
		if err != nil || len(rows) != 1 || string(rows[0].Value) != `{"sum": 6, "count": 3}` {
			t.Fatalf("%s: state: %+v %v", via, rows, err)
		}
		got, err := c.Pop(ctx, sink, "", client.ConsumeOptions{Batch: 10, Wait: time.Second})
		if err != nil || len(got) != 3 {
			t.Fatalf("%s: sink: %+v %v", via, got, err)
		}
		if more, err := c.Pop(ctx, src, "agg", client.ConsumeOptions{Wait: 10 * time.Millisecond}); err != nil || len(more) != 0 {
			t.Fatalf("%s: source after the cycle: %d %v", via, len(more), err)
		}
		q.Reset = true
		if r, err := c.RegisterStream(ctx, q); err != nil || !r.Reset || r.QueryID != reg.QueryID {
			t.Fatalf("%s: reset: %+v %v", via, r, err)
		}
		if rows, err := c.StreamState(ctx, client.StateQuery{QueryID: reg.QueryID, PartitionID: msgs[0].PartitionID}); err != nil || len(rows) != 0 {
			t.Fatalf("%s: state after reset: %+v %v", via, rows, err)
		}
	}
}

// A bridge killed -9 between cycles, with a batch popped and not yet
// committed, loses nothing and doubles nothing: the uncommitted batch comes
// back after its lease (the SDK's redelivery path), the state read after
// the restart is the last committed one, and at the end the state counts
// every source message once and the sink holds each once.
func TestStreamsSurviveKill9(t *testing.T) {
	const parts, perPart = 2, 20
	bin := bridgeBinary(t)
	b := newBridge(t, bin)
	c, err := client.New(client.Config{HTTPURL: "http://" + b.http})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if status, out := post(t, "http://"+b.http+"/api/v1/configure", `{"queue":"k-src","options":{"leaseTime":1}}`); status != http.StatusOK {
		t.Fatalf("configure: %d %s", status, out)
	}
	want := 0
	for p := 0; p < parts; p++ {
		for k := 1; k <= perPart; k++ {
			want += k
			if _, err := c.Push(ctx, client.Item{Queue: "k-src", Partition: fmt.Sprint("p", p), TransactionID: fmt.Sprintf("p%d-%d", p, k), Payload: json.RawMessage(fmt.Sprint(k))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	reg, err := c.RegisterStream(ctx, client.StreamQuery{Name: "k-totals", Source: "k-src", Sink: "k-sink", ConfigHash: "h"})
	if err != nil {
		t.Fatal(err)
	}
	pop := func() []client.Message {
		msgs, err := c.Pop(ctx, "k-src", "agg", client.ConsumeOptions{Batch: 7, Wait: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return msgs
	}
	// Two committed cycles, then a batch popped and left uncommitted.
	for i := 0; i < 2; i++ {
		msgs := pop()
		if len(msgs) == 0 {
			t.Fatal("nothing to pop")
		}
		if _, err := cycleBatch(ctx, c, reg.QueryID, "agg", "k-sink", msgs); err != nil {
			t.Fatal(err)
		}
	}
	if len(pop()) == 0 {
		t.Fatal("nothing to pop")
	}
	if err := b.proc.Stop(t, syscall.SIGKILL); err == nil {
		t.Fatal("the bridge exited cleanly on SIGKILL")
	}
	b.start(t, bin)
	consumed := 0
	testkit.WaitFor(t, "every source message to be consumed", 2*time.Minute, func() bool {
		msgs := pop()
		if len(msgs) > 0 {
			if _, err := cycleBatch(ctx, c, reg.QueryID, "agg", "k-sink", msgs); err != nil {
				t.Fatal(err)
			}
		}
		n := countRows(t, b.dsn, `SELECT coalesce(sum((value->>'count')::int), 0) FROM queen.stream_state`)
		consumed = int(n)
		return n >= parts*perPart
	})
	sum := countRows(t, b.dsn, `SELECT coalesce(sum((value->>'sum')::int), 0) FROM queen.stream_state`)
	if consumed != parts*perPart || sum != int64(want) {
		t.Fatalf("the state counts %d messages summing to %d, want %d summing to %d", consumed, sum, parts*perPart, want)
	}
	if n := countRows(t, b.dsn, `SELECT count(*) FROM queen.stream_state`); n != parts {
		t.Fatalf("%d state rows, want one per partition", n)
	}
	sink, err := c.Pop(ctx, "k-sink", "check", client.ConsumeOptions{Batch: 1000, Partitions: parts, Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range sink {
		if seen[m.TransactionID] {
			t.Fatalf("the sink holds %s twice", m.TransactionID)
		}
		seen[m.TransactionID] = true
	}
	if n := countRows(t, b.dsn, `SELECT sum(p.last_offset) FROM queen.log_partitions p JOIN queen.queues q ON q.id = p.queue_id WHERE q.name = 'k-sink'`); n != parts*perPart {
		t.Fatalf("the sink holds %d messages, want %d", n, parts*perPart)
	}
}

// countRows reads one number from the bridge's database.
func countRows(t testing.TB, dsn, sql string) int64 {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var n int64
	if err := pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}
