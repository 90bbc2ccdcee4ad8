package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/client"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// parkedOn reads queen_parked_reads of the bridge: the pops (and reads)
// parked on it now.
func parkedOn(t testing.TB, b *bridgeProc) int {
	t.Helper()
	resp, err := http.Get("http://" + b.http + "/metrics/prometheus")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^queen_parked_reads ([0-9]+)$`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("queen_parked_reads not exposed: %d", resp.StatusCode)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// A consumer that left holds nothing: Consume over NATS whose context is
// cancelled, or whose deadline passes, while its pop is parked on the
// bridge leaves no pop parked there, so a push after it is not claimed for
// nobody: the next consumer gets it at once, no lease held.
func TestConsumeThatLeftHoldsNothing(t *testing.T) {
	b := newBridge(t, bridgeBinary(t))
	c, err := client.New(client.Config{NATS: natsConn(t), Prefix: b.prefix})
	if err != nil {
		t.Fatal(err)
	}
	overHTTP, err := client.New(client.Config{HTTPURL: "http://" + b.http})
	if err != nil {
		t.Fatal(err)
	}
	for i, leave := range []string{"cancel", "deadline"} {
		queue := "left-" + leave
		var ctx context.Context
		var cancel context.CancelFunc
		if leave == "cancel" {
			ctx, cancel = context.WithCancel(context.Background())
		} else {
			ctx, cancel = context.WithTimeout(context.Background(), 3*time.Second)
		}
		delivered := make(chan []client.Message, 1)
		returned := make(chan error, 1)
		go func() {
			returned <- c.Consume(ctx, queue, "", func(_ context.Context, msgs []client.Message) error {
				delivered <- msgs
				return nil
			}, client.ConsumeOptions{Partition: "p", Wait: 30 * time.Second})
		}()
		testkit.WaitFor(t, leave+": the consumer's pop parked", 10*time.Second, func() bool { return parkedOn(t, b) > 0 })
		if leave == "cancel" {
			cancel()
		}
		select {
		case err := <-returned:
			if err != nil {
				t.Fatalf("%s: Consume: %v", leave, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: Consume did not return", leave)
		}
		cancel()
		testkit.WaitFor(t, leave+": no pop parked once the consumer left", 10*time.Second, func() bool { return parkedOn(t, b) == 0 })
		if _, err := overHTTP.Push(context.Background(), client.Item{Queue: queue, Partition: "p", TransactionID: "after", Payload: json.RawMessage(`1`)}); err != nil {
			t.Fatal(err)
		}
		status, out := get(t, "http://"+b.http+"/api/v1/pop/queue/"+queue+"/partition/p")
		var p struct {
			Messages []client.Message `json:"messages"`
		}
		if status != http.StatusOK || json.Unmarshal(out, &p) != nil || len(p.Messages) != 1 || p.Messages[0].TransactionID != "after" {
			t.Fatalf("%s (%d): the next consumer's pop: %d %s", leave, i, status, out)
		}
		select {
		case msgs := <-delivered:
			t.Fatalf("%s: the consumer that left was handed %d messages", leave, len(msgs))
		default:
		}
	}
}

func get(t testing.TB, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}
