package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/client"
	"github.com/queenbridge/queenbridge/internal/testenv"
)

// A pipeline step over both transports: pop a batch of A, push what it
// makes to B and acknowledge the batch, in one transaction. It commits
// whole; sent again (a lost answer), it fails on its first push, now a
// duplicate, and writes nothing twice.
func TestCommitForwardsABatch(t *testing.T) {
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
		a, out := "a-"+via, "b-"+via
		for i := 0; i < 3; i++ {
			if _, err := c.Push(ctx, client.Item{Queue: a, Payload: json.RawMessage(fmt.Sprint(i))}); err != nil {
				t.Fatal(err)
			}
		}
		msgs, err := c.Pop(ctx, a, "stage", client.ConsumeOptions{Batch: 10, Wait: time.Second})
		if err != nil || len(msgs) != 3 {
			t.Fatalf("%s: pop: %d %v", via, len(msgs), err)
		}
		tx := client.Txn{Ack: msgs, Group: "stage"}
		for _, m := range msgs {
			tx.Push = append(tx.Push, client.Item{Queue: out, Partition: m.Partition, Payload: m.Data, TransactionID: "fwd-" + m.TransactionID})
		}
		res, err := c.Commit(ctx, tx)
		if err != nil || len(res.Results) != 6 || res.Results[2].Offset != 3 || res.Results[3].Type != "ack" {
			t.Fatalf("%s: commit: %+v %v", via, res, err)
		}
		_, err = c.Commit(ctx, tx)
		var failed *client.TxnError
		if !errors.As(err, &failed) || !strings.Contains(failed.Message, "operations[0]: duplicate transactionId") {
			t.Fatalf("%s: replay: %v", via, err)
		}
		got, err := c.Pop(ctx, out, "", client.ConsumeOptions{Batch: 10, Wait: time.Second})
		if err != nil || len(got) != 3 || string(got[2].Data) != "2" {
			t.Fatalf("%s: B: %+v %v", via, got, err)
		}
		if more, err := c.Pop(ctx, a, "stage", client.ConsumeOptions{Wait: 10 * time.Millisecond}); err != nil || len(more) != 0 {
			t.Fatalf("%s: A after the transaction: %d %v", via, len(more), err)
		}
	}
}
