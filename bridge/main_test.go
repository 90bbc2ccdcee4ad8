package bridge_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/queenbridge/queenbridge/bridge"
	"github.com/queenbridge/queenbridge/fusion"
	"github.com/queenbridge/queenbridge/internal/tenancy"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/jetstream"
	"github.com/queenbridge/queenbridge/metrics"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/publish"
	"github.com/queenbridge/queenbridge/spool"
	"github.com/queenbridge/queenbridge/storage"
	"github.com/rs/zerolog"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// node is one bridge wired as cmd/queen-bridge wires it, on its own
// database and its own subject prefix.
type node struct {
	t      testing.TB
	db     *pgwire.DB
	fu     *fusion.Fusion
	br     *bridge.Bridge
	nc     *nats.Conn
	sp     *spool.Spool
	prefix string
	base   string // http://addr
	// stopOnce: a test may stop a node before its cleanup does.
	stopOnce sync.Once
}

type nodeOpts struct {
	keys     map[uint8][]byte // encryption keys by id
	maxBody  int64
	tokens   map[string]tenancy.TenantID
	admins   map[string]tenancy.TenantID // admin tokens
	metrics  string                      // Config.MetricsAddr
	dsn      string                      // share a database; default: a new one
	natsURL  string                      // default: the test binary's NATS
	natsOpts []nats.Option               // the bridge's connection options
	accounts map[string]tenancy.TenantID // Config.NATSAccounts
	inflight int64                       // Config.MaxInflightBytes
	bodyWait time.Duration               // Config.BudgetWait
	bodyTO   time.Duration               // Config.BodyTimeout
	parked   int                         // Config.MaxParked
	prefix   string
	registry *prometheus.Registry
	spoolDir string        // default: a new temporary directory
	stmtTO   time.Duration // statement timeout; default pgwire's
	acqTO    time.Duration // pgwire.Config.AcquireTimeout; default pgwire's
	poll     time.Duration // maintenance re-read; default the bridge's
	spoolMax int64
	noHot    bool                          // QUEEN_HOTLIST=0
	retain   time.Duration                 // retention interval; default: off
	sink     func(fusion.Sink) fusion.Sink // wraps the database as fusion's sink
	beat     time.Duration                 // Config.Heartbeat
	fwdTO    time.Duration                 // Config.ForwardTimeout
	streams  []jetstream.Stream            // Config.JetStream
	leaf     [3]string                     // Config.LeafURL, LeafUser, LeafPassword
	subMode  string                        // Config.DefaultSubscriptionMode
	publish  []publish.Source              // Config.Publish
	pubLag   int64                         // Config.PublishMaxLagBytes
	logger   zerolog.Logger                // Config.Logger; default disabled
}

func newNode(t testing.TB, o nodeOpts) *node {
	t.Helper()
	ctx := context.Background()
	if o.dsn == "" {
		o.dsn = testenv.NewDatabase(t)
	}
	if o.natsURL == "" {
		o.natsURL = testenv.NATSURL(t)
	}
	if o.prefix == "" {
		o.prefix = "t" + randHex(4)
	}
	if o.registry == nil {
		o.registry = prometheus.NewRegistry()
	}
	db, err := pgwire.Open(ctx, pgwire.Config{DSN: o.dsn, MaxConns: 8, StatementTimeout: o.stmtTO, AcquireTimeout: o.acqTO})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(o.natsURL, o.natsOpts...)
	if err != nil {
		t.Fatal(err)
	}
	if o.spoolDir == "" {
		o.spoolDir = t.TempDir()
	}
	sp, err := spool.Open(spool.Config{Dir: o.spoolDir, MaxBytes: o.spoolMax})
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New(o.registry)
	var sink fusion.Sink = db
	if o.sink != nil {
		sink = o.sink(db)
	}
	fu, err := fusion.New(fusion.Config{Sink: sink, InFlightMax: 8, OnBundle: m.FusionHook})
	if err != nil {
		t.Fatal(err)
	}
	if err := fu.Start(ctx); err != nil {
		t.Fatal(err)
	}
	br, err := bridge.New(bridge.Config{DB: db, Fusion: fu, NATS: nc, Prefix: o.prefix, HTTPAddr: "127.0.0.1:0",
		MaxBodyBytes: o.maxBody, EncryptionKeys: o.keys, Tokens: o.tokens, AdminTokens: o.admins, MetricsAddr: o.metrics, NATSAccounts: o.accounts, MaxInflightBytes: o.inflight, BudgetWait: o.bodyWait, BodyTimeout: o.bodyTO, MaxParked: o.parked, Registry: o.registry, Spool: sp,
		MaintenancePoll: o.poll, DrainInterval: 50 * time.Millisecond, DisableHotlist: o.noHot, RetentionInterval: retention(o.retain),
		Heartbeat: o.beat, ForwardTimeout: o.fwdTO, JetStream: o.streams, DefaultSubscriptionMode: o.subMode,
		LeafURL: o.leaf[0], LeafUser: o.leaf[1], LeafPassword: o.leaf[2],
		Publish: o.publish, PublishRetry: 50 * time.Millisecond, PublishMaxLagBytes: o.pubLag, Logger: o.logger}, m)
	if err != nil {
		t.Fatal(err)
	}
	if err := br.Start(ctx); err != nil {
		t.Fatal(err)
	}
	n := &node{t: t, db: db, fu: fu, br: br, nc: nc, sp: sp, prefix: o.prefix, base: "http://" + br.HTTPAddr()}
	t.Cleanup(n.stop)
	return n
}

func (n *node) stop() {
	n.stopOnce.Do(n.stopNow)
}

func (n *node) stopNow() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.br.Stop(ctx); err != nil {
		n.t.Errorf("bridge stop: %v", err)
	}
	if err := n.fu.Stop(ctx); err != nil {
		n.t.Errorf("fusion stop: %v", err)
	}
	n.nc.Close()
	n.db.Close()
	n.sp.Close()
}

// send sends a request of any method and returns status and body. A body
// goes as application/json, and so does every POST (the front door wants
// it there, body or none). It may run on any goroutine: it reports a
// failure instead of failing the test.
func (n *node) send(method, path string, body []byte, header ...string) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, n.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil || method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
		if header[i] == "Host" {
			req.Host = header[i+1]
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// call is send on the test's goroutine: a failure fails the test.
func (n *node) call(method, path string, body []byte, header ...string) (int, []byte) {
	n.t.Helper()
	status, out, err := n.send(method, path, body, header...)
	if err != nil {
		n.t.Fatal(err)
	}
	return status, out
}

// post sends body to an HTTP route (as application/json unless header
// says otherwise) and returns status and body.
func (n *node) post(path string, body []byte, header ...string) (int, []byte) {
	n.t.Helper()
	return n.call(http.MethodPost, path, body, header...)
}

func (n *node) get(path string, header ...string) (int, []byte) {
	n.t.Helper()
	return n.call(http.MethodGet, path, nil, header...)
}

// callJSON sends a request that must answer 200 and decodes the answer
// into v.
func (n *node) callJSON(method, path string, body []byte, v any, header ...string) {
	n.t.Helper()
	status, out := n.call(method, path, body, header...)
	if status != http.StatusOK {
		n.t.Fatalf("%s %s: %d %s", method, path, status, out)
	}
	if err := json.Unmarshal(out, v); err != nil {
		n.t.Fatalf("%s %s: %s: %v", method, path, out, err)
	}
}

// natsPush sends body on the push subject (suffix: ".<tenant>" or "").
func (n *node) natsPush(body []byte, suffix string) *nats.Msg {
	n.t.Helper()
	msg, err := n.nc.Request(n.prefix+".v1.push"+suffix, body, 30*time.Second)
	if err != nil {
		n.t.Fatalf("nats request: %v", err)
	}
	return msg
}

type result struct {
	Index         int    `json:"index"`
	Status        string `json:"status"`
	MessageID     string `json:"messageId"`
	TransactionID string `json:"transactionId"`
	Queue         string `json:"queue"`
	Partition     string `json:"partition"`
	Offset        int64  `json:"offset"`
	CreatedAt     string `json:"createdAt"`
	Error         string `json:"error"`
}

func (n *node) pushHTTP(body string) []result {
	n.t.Helper()
	status, out := n.post("/api/v1/push", []byte(body))
	if status != http.StatusCreated {
		n.t.Fatalf("push: %d %s", status, out)
	}
	return decodeResults(n.t, out)
}

func decodeResults(t testing.TB, out []byte) []result {
	t.Helper()
	var rs []result
	if err := json.Unmarshal(out, &rs); err != nil {
		t.Fatalf("response %s: %v", out, err)
	}
	return rs
}

func items(parts ...string) string {
	var b bytes.Buffer
	b.WriteString(`{"items":[`)
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p)
	}
	b.WriteString(`]}`)
	return b.String()
}

func item(queue, partition, txid string) string {
	s := fmt.Sprintf(`{"queue":%q`, queue)
	if partition != "" {
		s += fmt.Sprintf(`,"partition":%q`, partition)
	}
	if txid != "" {
		s += fmt.Sprintf(`,"transactionId":%q`, txid)
	}
	return s + `,"payload":{"n":1}}`
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (n *node) count(sql string, args ...any) int64 {
	n.t.Helper()
	var c int64
	if err := n.db.Pool().QueryRow(context.Background(), sql, args...).Scan(&c); err != nil {
		n.t.Fatal(err)
	}
	return c
}

func pgwireEncrypt() storage.QueueUpdate {
	on := true
	return storage.QueueUpdate{EncryptionEnabled: &on}
}

func retention(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
