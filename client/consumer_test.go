package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/client"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// Consume over NATS and over HTTP: each named group gets every message
// once, in order per partition; a batch the handler fails comes again.
func TestConsumeOverNATSAndHTTP(t *testing.T) {
	b := newBridge(t, bridgeBinary(t))
	ctx := context.Background()
	overNATS, err := client.New(client.Config{NATS: natsConn(t), Prefix: b.prefix})
	if err != nil {
		t.Fatal(err)
	}
	overHTTP, err := client.New(client.Config{HTTPURL: "http://" + b.http})
	if err != nil {
		t.Fatal(err)
	}
	var its []client.Item
	for k := 0; k < 50; k++ {
		for p := 0; p < 3; p++ {
			its = append(its, client.Item{Queue: "cons", Partition: fmt.Sprintf("p%d", p), TransactionID: fmt.Sprintf("p%d-%d", p, k), Payload: json.RawMessage(`{"k":1}`)})
		}
	}
	if _, err := overHTTP.Push(ctx, its...); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*client.Client{"nats": overNATS, "http": overHTTP} {
		cctx, cancel := context.WithCancel(ctx)
		var mu sync.Mutex
		next := map[string]int{}
		seen := map[string]int{}
		failedOnce := false
		err := c.Consume(cctx, "cons", "g-"+name, func(_ context.Context, msgs []client.Message) error {
			mu.Lock()
			defer mu.Unlock()
			if !failedOnce {
				failedOnce = true
				return errors.New("first batch fails")
			}
			for _, m := range msgs {
				var p, k int
				fmt.Sscanf(m.TransactionID, "p%d-%d", &p, &k)
				if k != next[m.Partition] || string(m.Data) != `{"k":1}` || m.ConsumerGroup != "g-"+name {
					t.Errorf("%s: %+v after %d", name, m, next[m.Partition])
				}
				next[m.Partition] = k + 1
				seen[m.TransactionID]++
			}
			if len(seen) == len(its) {
				cancel()
			}
			return nil
		}, client.ConsumeOptions{Batch: 20, Wait: time.Second})
		if err != nil || len(seen) != len(its) {
			t.Fatalf("%s: %d of %d consumed: %v", name, len(seen), len(its), err)
		}
	}
}

// A lease is renewed while the handler runs, so the partition stays held
// past the lease's first expiry. The bridge's leases last 500 ms (the
// test-only session setting queen.lease_ms, whatever the queue's
// leaseTime), renewed every 50 ms; the handler polls the database until
// the lease has outlived its first expiry and is still live, then a pop
// of the partition must find it held.
func TestConsumeRenewsTheLease(t *testing.T) {
	b := newBridgeOn(t, bridgeBinary(t), testenv.WithSetting(testenv.NewDatabase(t), "queen.lease_ms", "500"))
	ctx := context.Background()
	c, err := client.New(client.Config{NATS: natsConn(t), Prefix: b.prefix})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Push(ctx, client.Item{Queue: "slow", Partition: "p", Payload: json.RawMessage(`1`)}); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, b.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// expiry is the lease's expiry and the database's clock.
	expiry := func(lease string) (expires, now time.Time) {
		if err := pool.QueryRow(ctx, `SELECT lease_expires_at, clock_timestamp() FROM queen.consumer_cursors WHERE lease_id = $1`, lease).
			Scan(&expires, &now); err != nil {
			t.Errorf("the lease %s: %v", lease, err)
		}
		return expires, now
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	handled := false
	err = c.Consume(cctx, "slow", "", func(_ context.Context, msgs []client.Message) error {
		defer cancel()
		handled = true
		first, _ := expiry(msgs[0].LeaseID)
		testkit.WaitFor(t, "the lease to outlive its first expiry, renewed", time.Minute, func() bool {
			expires, now := expiry(msgs[0].LeaseID)
			return now.After(first) && expires.After(now)
		})
		resp, err := http.Get("http://" + b.http + "/api/v1/pop/queue/slow/partition/p")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Errorf("a pop while the handler runs: %d (the lease was not renewed)", resp.StatusCode)
		}
		return nil
	}, client.ConsumeOptions{RenewEvery: 50 * time.Millisecond, Wait: time.Second})
	if err != nil || !handled {
		t.Fatalf("consume: handled %v, %v", handled, err)
	}
}

func post(t testing.TB, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	_, _ = fmt.Fprint(&sb, resp.Status)
	return resp.StatusCode, sb.String()
}

// A batch handled while the consumer stops is still acknowledged: the next
// consumer of the group starts after it instead of waiting out its lease.
func TestConsumeAcknowledgesTheBatchHandledWhileStopping(t *testing.T) {
	b := newBridge(t, bridgeBinary(t))
	ctx := context.Background()
	c, err := client.New(client.Config{NATS: natsConn(t), Prefix: b.prefix})
	if err != nil {
		t.Fatal(err)
	}
	var its []client.Item
	for k := 0; k < 10; k++ {
		its = append(its, client.Item{Queue: "stop", Partition: "p", TransactionID: fmt.Sprintf("s%d", k), Payload: json.RawMessage(`1`)})
	}
	if _, err := c.Push(ctx, its...); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	acked := 0
	err = c.Consume(cctx, "stop", "g", func(context.Context, []client.Message) error {
		cancel() // the stop arrives while the batch is handled
		return nil
	}, client.ConsumeOptions{Batch: 4, Wait: time.Second, OnAck: func(msgs []client.Message, _ []client.AckResult) { acked += len(msgs) }})
	if err != nil || acked != 4 {
		t.Fatalf("acknowledged %d of the batch handled while stopping: %v", acked, err)
	}
	var got []string
	cctx, cancel = context.WithCancel(ctx)
	err = c.Consume(cctx, "stop", "g", func(_ context.Context, msgs []client.Message) error {
		for _, m := range msgs {
			got = append(got, m.TransactionID)
		}
		if len(got) >= 6 {
			cancel()
		}
		return nil
	}, client.ConsumeOptions{Batch: 10, Wait: time.Second})
	if err != nil || fmt.Sprint(got) != "[s4 s5 s6 s7 s8 s9]" {
		t.Fatalf("the next consumer got %v: %v", got, err)
	}
}
