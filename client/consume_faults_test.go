package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/client"
)

// Exactly-once processing under faults: a consumer group drains 20,000
// messages over 50 partitions with 8 consumer processes, through two
// bridges, while one consumer process is killed (SIGKILL, holding a batch
// it never acknowledges) and one bridge is restarted. Every message is
// acknowledged successfully exactly once, none is skipped (every cursor
// reaches its partition's end, no dead letter), and each consumer saw
// every partition in order. Redeliveries (the killed consumer's batch,
// after its lease expired) are allowed and counted.
func TestConsumeExactlyOnceUnderFaults(t *testing.T) {
	const parts, perPart, consumers = 50, 400, 8
	// The queue's short lease brings the killed consumer's batch back soon;
	// consumers renew theirs well within it.
	r := newFaultRig(t, "drain")
	r.fill(t, "drain", parts, perPart, 10, func(int, int) json.RawMessage { return json.RawMessage(`{}`) })

	// Line kinds: A acknowledged ids, D delivered ids, H hanging.
	for i := 0; i < consumers; i++ {
		r.spawn(t, "TestConsumerHelperProcess", "QUEEN_CONSUMER_HANG="+strconv.FormatBool(i == 0))
	}
	defer r.stopAll()

	acked := map[string]int{}
	delivered := 0
	last := map[[2]int]int{} // (process, partition) -> last acknowledged k
	killed, restarted := false, false
	deadline := time.After(8 * time.Minute)
	var restartDone <-chan struct{}
	for len(acked) < parts*perPart {
		select {
		case <-deadline:
			t.Fatalf("%d of %d acknowledged when the time ran out", len(acked), parts*perPart)
		case l := <-r.lines:
			ids := strings.Fields(l.text)
			switch l.kind {
			case "H":
				if !killed {
					killed = true
					_ = r.procs[l.proc].Process.Kill()
					t.Logf("killed consumer %d while it held a batch, at %d acknowledged", l.proc, len(acked))
				}
			case "D":
				delivered += len(ids)
			case "A":
				for _, txid := range ids {
					acked[txid]++
					if acked[txid] > 1 {
						t.Fatalf("%s acknowledged %d times", txid, acked[txid])
					}
					var p, k int
					fmt.Sscanf(txid, "p%d-%d", &p, &k)
					if prev, ok := last[[2]int{l.proc, p}]; ok && k <= prev {
						t.Fatalf("consumer %d acknowledged %s after p%d-%d", l.proc, txid, p, prev)
					}
					last[[2]int{l.proc, p}] = k
				}
			}
			if !restarted && len(acked) >= parts*perPart/3 {
				restarted = true
				t.Logf("restarting a bridge at %d acknowledged", len(acked))
				restartDone = r.restartB(t)
			}
		}
	}
	if !killed || !restarted {
		t.Fatalf("killed %v, restarted %v", killed, restarted)
	}
	<-restartDone
	t.Logf("%d messages acknowledged once each; %d deliveries (%d redelivered)", len(acked), delivered, delivered-len(acked))
	pool, err := pgxpool.New(context.Background(), r.a.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var behind, dead int64
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE c.cursor_offset <> p.last_offset), (SELECT count(*) FROM queen.dead_letters)
		FROM queen.log_partitions p JOIN queen.consumer_cursors c ON c.partition_id = p.id AND c.consumer_group = 'workers'`).Scan(&behind, &dead); err != nil {
		t.Fatal(err)
	}
	if behind != 0 || dead != 0 {
		t.Fatalf("%d cursors short of their partition's end, %d dead letters", behind, dead)
	}
	r.stopAll()
	r.readers.Wait()
}

// TestConsumerHelperProcess is one consumer process of
// TestConsumeExactlyOnceUnderFaults: it consumes group "workers" over NATS
// and prints "D ids" for each delivered batch and "A ids" for the messages
// whose acknowledgement succeeded; with QUEEN_CONSUMER_HANG=true it prints
// "H" and blocks in its third batch, until killed.
func TestConsumerHelperProcess(t *testing.T) {
	c, ctx := helperClient(t)
	hang := os.Getenv("QUEEN_CONSUMER_HANG") == "true"
	batches := 0
	err := c.Consume(ctx, "drain", "workers", func(ctx context.Context, msgs []client.Message) error {
		ids := make([]string, len(msgs))
		for i, m := range msgs {
			ids[i] = m.TransactionID
		}
		say("D", strings.Join(ids, " "))
		if batches++; hang && batches == 3 {
			say("H", "")
			<-ctx.Done()
		}
		return nil
	}, client.ConsumeOptions{Batch: 50, Wait: time.Second, RenewEvery: 500 * time.Millisecond, LeaseSeconds: 3,
		OnAck: func(msgs []client.Message, rs []client.AckResult) {
			var ids []string
			for i, r := range rs {
				if r.Success {
					ids = append(ids, msgs[i].TransactionID)
				}
			}
			say("A", strings.Join(ids, " "))
		}})
	if err != nil {
		t.Fatal(err)
	}
}
