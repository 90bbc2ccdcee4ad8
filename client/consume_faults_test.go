package client_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/client"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
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
	bin := bridgeBinary(t)
	a := newBridge(t, bin)
	b := &bridgeProc{http: testkit.FreeAddr(t), prefix: a.prefix, dsn: a.dsn}
	b.env = []string{"QUEEN_NATS_URL=" + testenv.NATSURL(t), "QUEEN_NATS_PREFIX=" + b.prefix, "QUEEN_PG_DSN=" + b.dsn,
		"QUEEN_HTTP_ADDR=" + b.http, "QUEEN_DATA_DIR=" + t.TempDir()}
	b.start(t, bin)
	t.Cleanup(func() { b.stop(t) })

	// A short lease, so that the killed consumer's batch comes back soon;
	// consumers renew theirs well within it.
	if status, out := post(t, "http://"+a.http+"/api/v1/configure", `{"queue":"drain","options":{"leaseTime":3}}`); status != http.StatusOK {
		t.Fatalf("configure: %d %s", status, out)
	}
	c, err := client.New(client.Config{HTTPURL: "http://" + a.http})
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k < perPart; k += 10 {
		var its []client.Item
		for p := 0; p < parts; p++ {
			for j := k; j < k+10; j++ {
				its = append(its, client.Item{Queue: "drain", Partition: fmt.Sprintf("p%d", p), TransactionID: fmt.Sprintf("p%d-%d", p, j), Payload: json.RawMessage(`{}`)})
			}
		}
		if _, err := c.Push(context.Background(), its...); err != nil {
			t.Fatal(err)
		}
	}

	type line struct {
		proc int
		kind string // A acknowledged, D delivered, H hanging
		txid string
	}
	lines := make(chan line, 4096)
	procs := make([]*exec.Cmd, consumers)
	var readers sync.WaitGroup
	for i := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestConsumerHelperProcess$")
		cmd.Env = append(os.Environ(), "QUEEN_CONSUMER_HELPER=1", "QUEEN_CONSUMER_NATS="+testenv.NATSURL(t),
			"QUEEN_CONSUMER_PREFIX="+a.prefix, "QUEEN_CONSUMER_HANG="+strconv.FormatBool(i == 0))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		procs[i] = cmd
		readers.Add(1)
		go func(i int) { // owned by the process: ends when its stdout closes
			defer readers.Done()
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				kind, rest, _ := strings.Cut(sc.Text(), " ")
				for _, id := range strings.Fields(rest) {
					lines <- line{i, kind, id}
				}
				if kind == "H" {
					lines <- line{i, kind, ""}
				}
			}
		}(i)
	}
	stopAll := func() {
		for _, p := range procs {
			if p.ProcessState == nil {
				_ = p.Process.Signal(syscall.SIGTERM)
			}
		}
		for _, p := range procs {
			_ = p.Wait()
		}
	}
	defer stopAll()

	acked := map[string]int{}
	delivered := 0
	last := map[[2]int]int{} // (process, partition) -> last acknowledged k
	killed, restarted := false, false
	deadline := time.After(8 * time.Minute)
	restartDone := make(chan struct{})
	for len(acked) < parts*perPart {
		select {
		case <-deadline:
			t.Fatalf("%d of %d acknowledged when the time ran out", len(acked), parts*perPart)
		case l := <-lines:
			switch l.kind {
			case "H":
				if !killed {
					killed = true
					_ = procs[l.proc].Process.Kill()
					t.Logf("killed consumer %d while it held a batch, at %d acknowledged", l.proc, len(acked))
				}
			case "D":
				delivered++
			case "A":
				acked[l.txid]++
				if acked[l.txid] > 1 {
					t.Fatalf("%s acknowledged %d times", l.txid, acked[l.txid])
				}
				var p, k int
				fmt.Sscanf(l.txid, "p%d-%d", &p, &k)
				if prev, ok := last[[2]int{l.proc, p}]; ok && k <= prev {
					t.Fatalf("consumer %d acknowledged %s after p%d-%d", l.proc, l.txid, p, prev)
				}
				last[[2]int{l.proc, p}] = k
			}
			if !restarted && len(acked) >= parts*perPart/3 {
				restarted = true
				t.Logf("restarting a bridge at %d acknowledged", len(acked))
				go func() {
					defer close(restartDone)
					b.stop(t)
					b.start(t, bin)
				}()
			}
		}
	}
	if !killed || !restarted {
		t.Fatalf("killed %v, restarted %v", killed, restarted)
	}
	<-restartDone
	t.Logf("%d messages acknowledged once each; %d deliveries (%d redelivered)", len(acked), delivered, delivered-len(acked))
	pool, err := pgxpool.New(context.Background(), a.dsn)
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
	stopAll()
	readers.Wait()
}

// TestConsumerHelperProcess is one consumer process of
// TestConsumeExactlyOnceUnderFaults: it consumes group "workers" over NATS
// and prints "D ids" for each delivered batch and "A ids" for the messages
// whose acknowledgement succeeded; with QUEEN_CONSUMER_HANG=true it prints
// "H" and blocks in its third batch, until killed.
func TestConsumerHelperProcess(t *testing.T) {
	if os.Getenv("QUEEN_CONSUMER_HELPER") == "" {
		t.Skip("helper for TestConsumeExactlyOnceUnderFaults; runs only when re-executed by it")
	}
	nc, err := nats.Connect(os.Getenv("QUEEN_CONSUMER_NATS"), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c, err := client.New(client.Config{NATS: nc, Prefix: os.Getenv("QUEEN_CONSUMER_PREFIX"), AttemptTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	hang := os.Getenv("QUEEN_CONSUMER_HANG") == "true"
	var mu sync.Mutex // one write per line
	say := func(kind string, ids []string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(os.Stdout, kind+" "+strings.Join(ids, " "))
	}
	batches := 0
	err = c.Consume(ctx, "drain", "workers", func(ctx context.Context, msgs []client.Message) error {
		ids := make([]string, len(msgs))
		for i, m := range msgs {
			ids[i] = m.TransactionID
		}
		say("D", ids)
		if batches++; hang && batches == 3 {
			say("H", nil)
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
			say("A", ids)
		}})
	if err != nil {
		t.Fatal(err)
	}
}
