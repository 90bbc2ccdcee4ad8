package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/client"
)

// Push one item over NATS and read its result. (Compiled, not run: it
// needs a bridge on the default NATS URL.)
func ExampleClient_Push() {
	nc, err := nats.Connect(nats.DefaultURL) // credentials, TLS, the tenant's account: nats.go options
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	c, err := client.New(client.Config{NATS: nc})
	if err != nil {
		fmt.Println(err)
		return
	}
	results, err := c.Push(context.Background(), client.Item{Queue: "orders.eu", Partition: "customer-42",
		Payload: json.RawMessage(`{"total":12.5}`), TransactionID: "order-1001"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(results[0].Status, results[0].Offset)
}

// A buffering producer: batches per queue, results per item, Close pushes
// what is left. (Compiled, not run.)
func ExampleProducer() {
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	c, _ := client.New(client.Config{NATS: nc})
	p := c.NewProducer(client.ProducerConfig{MaxItems: 500, Linger: 5 * time.Millisecond,
		OnResult: func(it client.Item, r client.Result, err error) {
			if err != nil || !r.Stored() {
				fmt.Println("not stored:", it.TransactionID, r.Error, err)
			}
		}})
	for i := 0; i < 1000; i++ {
		_ = p.Add(context.Background(), client.Item{Queue: "orders.eu", Payload: json.RawMessage(fmt.Sprint(i))})
	}
	_ = p.Close(context.Background())
}

// Consume a queue as a consumer group: batches of up to 100, acknowledged
// together when the handler returns nil (an error hands them back for a
// retry), the lease renewed while the handler runs. (Compiled, not run.)
func ExampleClient_Consume() {
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	c, _ := client.New(client.Config{NATS: nc}) // or client.Config{HTTPURL: "http://127.0.0.1:6632"}
	ctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	err = c.Consume(ctx, "orders.eu", "billing", func(ctx context.Context, msgs []client.Message) error {
		for _, m := range msgs {
			fmt.Println(m.Partition, m.TransactionID, string(m.Data))
		}
		return nil
	}, client.ConsumeOptions{Batch: 100})
	if err != nil {
		fmt.Println(err)
	}
}

// A pipeline step: pop a batch of one queue, push what it makes to the
// next and acknowledge the batch, all or nothing. (Compiled, not run.)
func ExampleClient_Commit() {
	nc, err := nats.Connect(nats.DefaultURL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	c, _ := client.New(client.Config{NATS: nc})
	ctx := context.Background()
	msgs, err := c.Pop(ctx, "orders.eu", "billing", client.ConsumeOptions{Batch: 100})
	if err != nil || len(msgs) == 0 {
		return
	}
	tx := client.Txn{Ack: msgs, Group: "billing"}
	for _, m := range msgs {
		tx.Push = append(tx.Push, client.Item{Queue: "invoices", Partition: m.Partition, Payload: m.Data})
	}
	if _, err := c.Commit(ctx, tx); err != nil {
		fmt.Println("not committed; the batch comes back after its lease:", err)
	}
}
