package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/client"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

func natsConn(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(testenv.NATSURL(t), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func stored(t testing.TB, b *bridgeProc, queue string) map[string]int {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), b.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	return testkit.StoredTransactionIDs(t, pool, queue)
}

// Push over NATS and over HTTP gives the same typed results; a refusal is a
// *RequestError that is not retried.
func TestPushOverNATSAndHTTP(t *testing.T) {
	b := newBridge(t, bridgeBinary(t))
	overNATS, err := client.New(client.Config{NATS: natsConn(t), Prefix: b.prefix})
	if err != nil {
		t.Fatal(err)
	}
	overHTTP, err := client.New(client.Config{HTTPURL: "http://" + b.http})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, c := range map[string]*client.Client{"nats": overNATS, "http": overHTTP} {
		rs, err := c.Push(ctx, client.Item{Queue: "cl", Partition: name, Payload: json.RawMessage(`{"a":1}`)},
			client.Item{Queue: "cl", Partition: name, Payload: json.RawMessage(`2`), TransactionID: "fixed-" + name})
		if err != nil || len(rs) != 2 || rs[0].Status != client.Queued || rs[0].Offset != 1 || rs[1].Offset != 2 ||
			rs[0].TransactionID == "" || rs[1].TransactionID != "fixed-"+name || rs[0].MessageID == "" {
			t.Fatalf("%s: %+v %v", name, rs, err)
		}
		rs, err = c.Push(ctx, client.Item{Queue: "cl", Partition: name, TransactionID: "fixed-" + name})
		if err != nil || rs[0].Status != client.Duplicate || rs[0].Offset != 2 {
			t.Fatalf("%s repeat: %+v %v", name, rs, err)
		}
		_, err = c.Push(ctx, client.Item{Queue: ""})
		var refused *client.RequestError
		if !errors.As(err, &refused) || refused.Status != http.StatusBadRequest {
			t.Fatalf("%s: a bad item: %v", name, err)
		}
	}
}

// Pushing while the bridge is stopped and started again: every item is
// stored exactly once, none is lost.
func TestRetriesAcrossABridgeRestartStoreEachItemOnce(t *testing.T) {
	bin := bridgeBinary(t)
	b := newBridge(t, bin)
	var retries atomic.Int64
	c, err := client.New(client.Config{NATS: natsConn(t), Prefix: b.prefix, AttemptTimeout: 2 * time.Second,
		RetryBudget: 2 * time.Minute, MaxBackoff: 200 * time.Millisecond, OnRetry: func(int, error) { retries.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	const writers, pushes, per = 4, 60, 10
	var sent atomic.Int64
	quarter := make(chan struct{}) // closed once a quarter of the items are stored
	var once sync.Once
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < pushes; i++ {
				items := make([]client.Item, per)
				for k := range items {
					items[k] = client.Item{Queue: "restart", Partition: fmt.Sprint("p", w), Payload: json.RawMessage(`1`),
						TransactionID: fmt.Sprintf("w%d-%d-%d", w, i, k)}
				}
				rs, err := c.Push(context.Background(), items...)
				if err != nil {
					errs <- err
					return
				}
				for _, r := range rs {
					if !r.Stored() {
						errs <- fmt.Errorf("item %s: %s %s", r.TransactionID, r.Status, r.Error)
						return
					}
				}
				if sent.Add(per) >= writers*pushes*per/4 {
					once.Do(func() { close(quarter) })
				}
			}
		}(w)
	}
	select {
	case <-quarter:
	case <-time.After(time.Minute):
		t.Fatalf("only %d items pushed in a minute", sent.Load())
	}
	b.stop(t)                          // mid-stream: pushes now find no responder and retry
	time.Sleep(300 * time.Millisecond) // how long the bridge stays away
	b.start(t, bin)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if retries.Load() == 0 {
		t.Fatal("no push was retried: the restart did not fall inside the stream")
	}
	want := writers * pushes * per
	deadline := time.Now().Add(time.Minute) // buffered items drain into PostgreSQL
	for {
		got := stored(t, b, "restart")
		twice := 0
		for _, n := range got {
			if n > 1 {
				twice++
			}
		}
		if twice > 0 {
			t.Fatalf("%d transactionIds stored more than once", twice)
		}
		if len(got) == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d items stored", len(got), want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// The producer loses nothing on Close, and keeps the order of each
// partition under concurrent adds.
func TestProducerKeepsOrderAndLosesNothing(t *testing.T) {
	b := newBridge(t, bridgeBinary(t))
	c, err := client.New(client.Config{NATS: natsConn(t), Prefix: b.prefix})
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		seq    int
		offset int64
	}
	var mu sync.Mutex
	byPart := map[string][]got{}
	results := 0
	p := c.NewProducer(client.ProducerConfig{MaxItems: 37, Linger: 20 * time.Millisecond, OnResult: func(it client.Item, r client.Result, err error) {
		mu.Lock()
		defer mu.Unlock()
		results++
		var seq int
		_ = json.Unmarshal(it.Payload, &seq)
		if err == nil && r.Status == client.Queued {
			byPart[it.Queue+"/"+it.Partition] = append(byPart[it.Queue+"/"+it.Partition], got{seq, r.Offset})
		}
	}})
	const adders, each = 8, 400
	var wg sync.WaitGroup
	for a := 0; a < adders; a++ {
		wg.Add(1)
		go func(a int) {
			defer wg.Done()
			queue, part := fmt.Sprint("prod", a%3), fmt.Sprint("p", a) // three queues, a partition per adder
			for i := 0; i < each; i++ {
				if err := p.Add(context.Background(), client.Item{Queue: queue, Partition: part, Payload: json.RawMessage(fmt.Sprint(i))}); err != nil {
					t.Error(err)
					return
				}
			}
		}(a)
	}
	wg.Wait()
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Add(context.Background(), client.Item{Queue: "late"}); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("Add after Close: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if results != adders*each {
		t.Fatalf("%d results for %d items", results, adders*each)
	}
	for part, gs := range byPart {
		if len(gs) != each {
			t.Fatalf("%s: %d queued of %d", part, len(gs), each)
		}
		for i, g := range gs {
			if g.seq != i || g.offset != int64(i+1) {
				t.Fatalf("%s: result %d is item %d at offset %d", part, i, g.seq, g.offset)
			}
		}
	}
	total := 0
	for q := 0; q < 3; q++ {
		total += len(stored(t, b, fmt.Sprint("prod", q)))
	}
	if total != adders*each {
		t.Fatalf("%d items stored of %d", total, adders*each)
	}
}

// A partition-aware client against one bridge process: it reads the
// table at New and sends its pushes on that bridge's own subject. A push
// while the bridge is down falls back to the shared subject (counted) and
// is retried until the bridge is back; the restarted bridge (a new id, a
// new own subject) announces its table, the client takes it, and goes on
// without a fallback or a lost item. Partition-aware over HTTP is refused.
func TestPartitionAwareAcrossARestart(t *testing.T) {
	if _, err := client.New(client.Config{HTTPURL: "http://127.0.0.1:1", PartitionAware: true}); err == nil {
		t.Fatal("a partition-aware client over HTTP was made")
	}
	bin := bridgeBinary(t)
	b := newBridge(t, bin)
	nc := natsConn(t)
	c, err := client.New(client.Config{NATS: nc, Prefix: b.prefix, PartitionAware: true, RetryBudget: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	first := c.Stats()
	if first.TableVersion == "" || first.TableFetches != 1 {
		t.Fatalf("no table after New: %+v", first)
	}
	tryPush := func(tag string) error {
		var its []client.Item
		for i := 0; i < 12; i++ {
			its = append(its, client.Item{Queue: "aware", Partition: fmt.Sprint("p", i%4), TransactionID: fmt.Sprintf("%s-%d", tag, i), Payload: json.RawMessage(`1`)})
		}
		rs, err := c.Push(context.Background(), its...)
		if err != nil {
			return fmt.Errorf("%s: %w", tag, err)
		}
		for i, r := range rs {
			if !r.Stored() || r.TransactionID != its[i].TransactionID {
				return fmt.Errorf("%s item %d: %+v", tag, i, r)
			}
		}
		return nil
	}
	push := func(tag string) {
		t.Helper()
		if err := tryPush(tag); err != nil {
			t.Fatal(err)
		}
	}
	push("before")
	if st := c.Stats(); st.OwnerParts != 1 || st.Fallbacks != 0 {
		t.Fatalf("one bridge, one part: %+v", st)
	}
	b.stop(t)
	during := make(chan error, 1)
	go func() { during <- tryPush("during") }()
	// The own subject has no responder: the push goes to the shared one,
	// which has none either until the bridge is back, and is retried.
	testkit.WaitFor(t, "the push to fall back", 30*time.Second, func() bool { return c.Stats().Fallbacks >= 12 })
	b.start(t, bin)
	if err := <-during; err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the restarted bridge's table", 30*time.Second, func() bool { return c.Stats().TableVersion != first.TableVersion })
	fallbacks := c.Stats().Fallbacks
	push("later")
	if st := c.Stats(); st.Fallbacks != fallbacks {
		t.Fatalf("fallbacks with the new table: %+v", st)
	}
	got := stored(t, b, "aware")
	for tx, n := range got {
		if n != 1 {
			t.Fatalf("%s stored %d times", tx, n)
		}
	}
	if got["before-0"] != 1 || got["during-11"] != 1 || got["later-5"] != 1 {
		t.Fatalf("missing items: %d stored", len(got))
	}
}
