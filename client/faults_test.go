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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/client"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// faultRig is what the fault tests share: two bridges on one database and
// one NATS prefix (so that one can be restarted while consumers carry on
// through the other), a queue with a 3 s lease (so that a killed
// consumer's batch comes back soon), and consumer processes re-executed
// from the test binary, whose stdout lines it hands on.
type faultRig struct {
	bin     string
	a, b    *bridgeProc
	c       *client.Client // over a's HTTP
	lines   chan helperLine
	procs   []*exec.Cmd
	readers sync.WaitGroup
}

// helperLine is one line a consumer process printed: a kind, then the rest.
type helperLine struct {
	proc       int
	kind, text string
}

func newFaultRig(t *testing.T, queue string) *faultRig {
	t.Helper()
	r := &faultRig{bin: bridgeBinary(t), lines: make(chan helperLine, 4096)}
	r.a = newBridge(t, r.bin)
	r.b = &bridgeProc{http: testkit.FreeAddr(t), prefix: r.a.prefix, dsn: r.a.dsn}
	r.b.env = []string{"QUEEN_NATS_URL=" + testenv.NATSURL(t), "QUEEN_NATS_PREFIX=" + r.b.prefix, "QUEEN_PG_DSN=" + r.b.dsn,
		"QUEEN_HTTP_ADDR=" + r.b.http, "QUEEN_DATA_DIR=" + t.TempDir()}
	r.b.start(t, r.bin)
	t.Cleanup(func() { r.b.stop(t) })
	if status, out := post(t, "http://"+r.a.http+"/api/v1/configure", `{"queue":"`+queue+`","options":{"leaseTime":3}}`); status != http.StatusOK {
		t.Fatalf("configure: %d %s", status, out)
	}
	var err error
	if r.c, err = client.New(client.Config{HTTPURL: "http://" + r.a.http}); err != nil {
		t.Fatal(err)
	}
	return r
}

// fill pushes perPart messages to each of parts partitions "p<n>" of queue,
// chunk per partition per push; message k of partition p has
// transactionId "p<p>-<k>".
func (r *faultRig) fill(t *testing.T, queue string, parts, perPart, chunk int, payload func(p, k int) json.RawMessage) {
	t.Helper()
	for k := 0; k < perPart; k += chunk {
		var its []client.Item
		for p := 0; p < parts; p++ {
			for j := k; j < k+chunk; j++ {
				its = append(its, client.Item{Queue: queue, Partition: fmt.Sprintf("p%d", p), TransactionID: fmt.Sprintf("p%d-%d", p, j), Payload: payload(p, j)})
			}
		}
		if _, err := r.c.Push(context.Background(), its...); err != nil {
			t.Fatal(err)
		}
	}
}

// spawn starts one consumer process running the test helper (a Test
// function that calls helperClient first), with env added to its
// environment, and hands its stdout lines to r.lines.
func (r *faultRig) spawn(t *testing.T, helper string, env ...string) {
	t.Helper()
	i := len(r.procs)
	cmd := exec.Command(os.Args[0], "-test.run=^"+helper+"$")
	cmd.Env = append(append(os.Environ(), "QUEEN_FAULT_HELPER="+helper, "QUEEN_FAULT_NATS="+testenv.NATSURL(t),
		"QUEEN_FAULT_PREFIX="+r.a.prefix), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.procs = append(r.procs, cmd)
	r.readers.Add(1)
	go func() { // owned by the process: ends when its stdout closes
		defer r.readers.Done()
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			kind, rest, _ := strings.Cut(sc.Text(), " ")
			r.lines <- helperLine{i, kind, rest}
		}
	}()
}

// stopAll stops the consumer processes still running and waits for all.
func (r *faultRig) stopAll() {
	for _, p := range r.procs {
		if p.ProcessState == nil {
			_ = p.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, p := range r.procs {
		_ = p.Wait()
	}
}

// restartB stops bridge b and starts it again, in the background; the
// channel closes when it is up.
func (r *faultRig) restartB(t *testing.T) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.b.stop(t)
		r.b.start(t, r.bin)
	}()
	return done
}

// helperClient is the start of a consumer process spawned by a faultRig: a
// client over the rig's NATS and prefix, and a context that ends on
// SIGTERM. Run any other way, the helper skips.
func helperClient(t *testing.T) (*client.Client, context.Context) {
	t.Helper()
	if os.Getenv("QUEEN_FAULT_HELPER") != t.Name() {
		t.Skip("helper of a fault test; runs only when re-executed by it")
	}
	nc, err := nats.Connect(os.Getenv("QUEEN_FAULT_NATS"), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	c, err := client.New(client.Config{NATS: nc, Prefix: os.Getenv("QUEEN_FAULT_PREFIX"), AttemptTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	t.Cleanup(stop)
	return c, ctx
}

var sayMu sync.Mutex // one write per line

// say prints one line for the rig to read: kind, then text.
func say(kind, text string) {
	sayMu.Lock()
	defer sayMu.Unlock()
	fmt.Fprintln(os.Stdout, kind+" "+text)
}
