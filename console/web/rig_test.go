package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The tokens the browser tests' bridge is started with: an admin and a
// tenant token of tenant A, a tenant token of tenant B.
const (
	tenantA     = "0190a9c2-7d5e-7c4e-9a1b-3f2e1d0c9b8a"
	tenantB     = "0190a9c2-7d5e-7c4e-9a1b-3f2e1d0c9b8b"
	adminToken  = "console-admin-token"
	readToken   = "console-tenant-a-token"
	tenantBTok  = "console-tenant-b-token"
	chromiumBin = "/usr/bin/chromium"
	encryptKey  = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
)

// bridgeProc is the queen-bridge binary, run with tokens and an encryption
// key on ports the kernel picks, on a database of its own.
type bridgeProc struct {
	*testkit.Process
	base string // http://host:port
}

func startBridge(t *testing.T) *bridgeProc {
	t.Helper()
	bin := testkit.BuildBridge(t, "../../cmd/queen-bridge")
	p := testkit.StartBridge(t, bin,
		"QUEEN_HTTP_ADDR=127.0.0.1:0", "QUEEN_NATS_LISTEN=127.0.0.1:-1",
		"QUEEN_PG_DSN="+testenv.NewDatabase(t), "QUEEN_DATA_DIR="+t.TempDir(),
		"QUEEN_HTTP_TOKENS="+readToken+"="+tenantA+","+tenantBTok+"="+tenantB,
		"QUEEN_HTTP_ADMIN_TOKENS="+adminToken+"="+tenantA,
		"QUEEN_ENCRYPTION_KEY="+encryptKey)
	b := &bridgeProc{Process: p}
	t.Cleanup(func() {
		if err := p.Stop(t, os.Interrupt); err != nil {
			t.Errorf("queen-bridge exit: %v\n%s", err, p.Logs())
		}
	})
	for _, line := range strings.Split(p.Logs(), "\n") {
		var ready struct{ Message, HTTP string }
		if json.Unmarshal([]byte(line), &ready) == nil && ready.Message == "queen-bridge ready" {
			b.base = "http://" + ready.HTTP
			return b
		}
	}
	t.Fatalf("no ready line:\n%s", p.Logs())
	return nil
}

// call sends a request to the bridge with token and answers the status and
// the body.
func (b *bridgeProc) call(t *testing.T, method, path, token string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, b.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
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

// must calls and fails the test unless the answer has status want; it
// decodes the body into v when v is not nil.
func (b *bridgeProc) must(t *testing.T, want int, method, path, token string, body, v any) {
	t.Helper()
	status, out := b.call(t, method, path, token, body)
	if status != want {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, status, want, out)
	}
	if v != nil {
		if err := json.Unmarshal(out, v); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, out)
		}
	}
}

// pushed is one push result.
type pushed struct {
	Status        string
	TransactionID string
	Offset        int64
	PartitionID   string `json:"partition_id"`
}

// push pushes items (queue, partition, payload, transactionId) with token.
func (b *bridgeProc) push(t *testing.T, token string, items ...map[string]any) []pushed {
	t.Helper()
	var rs []pushed
	b.must(t, http.StatusCreated, "POST", "/api/v1/push", token, map[string]any{"items": items}, &rs)
	return rs
}

// popped is a pop's answer.
type popped struct {
	LeaseID     string
	PartitionID string
	Messages    []struct {
		TransactionID string
		PartitionID   string
		Data          json.RawMessage
	}
}

// pop pops one partition of queue for group, up to batch messages.
func (b *bridgeProc) pop(t *testing.T, token, queue, partition, group string, batch int) popped {
	t.Helper()
	var p popped
	b.must(t, http.StatusOK, "GET", fmt.Sprintf("/api/v1/pop/queue/%s/partition/%s?batch=%d&consumerGroup=%s",
		queue, partition, batch, group), token, nil, &p)
	return p
}

// ack acknowledges transactionIds of a pop with status.
func (b *bridgeProc) ack(t *testing.T, token, group string, p popped, status string, txids ...string) {
	t.Helper()
	var acks []map[string]any
	for _, id := range txids {
		acks = append(acks, map[string]any{"transactionId": id, "partitionId": p.PartitionID, "leaseId": p.LeaseID,
			"status": status, "error": "boom: " + id})
	}
	var rs []struct {
		Success bool
		Error   *string
	}
	b.must(t, http.StatusOK, "POST", "/api/v1/ack/batch", token, map[string]any{"consumerGroup": group, "acknowledgments": acks}, &rs)
	for i, r := range rs {
		if !r.Success {
			t.Fatalf("ack %s %s: %v", txids[i], status, *r.Error)
		}
	}
}

// browser starts Debian's Chromium, headless, on a fresh profile. Without
// the background-networking flags Chromium tries to reach Google's
// services, which a machine without a network refuses noisily.
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumBin); err != nil {
		t.Fatalf("the console's browser tests drive Debian's Chromium at %s, which is missing (%v): install it with "+
			"`apt-get install -y chromium` (.ci/run does)", chromiumBin, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumBin),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 860))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start %s: %v", chromiumBin, err)
	}
	return ctx
}

// tab is one browser tab: its own sessionStorage, so its own token.
type tab struct {
	ctx  context.Context
	base string
	name string
}

func newTab(t *testing.T, browserCtx context.Context, b *bridgeProc, name string) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browserCtx)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 860)); err != nil {
		t.Fatal(err)
	}
	return &tab{ctx: ctx, base: b.base, name: name}
}

// do runs actions in the tab, failing with the page's text.
func (tb *tab) do(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 45*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s (%s): %v\npage: %s", what, tb.name, err, tb.text(t))
	}
}

// open navigates to path and waits until the page has drawn itself once.
func (tb *tab) open(t *testing.T, path string) {
	t.Helper()
	tb.do(t, "open "+path, chromedp.Navigate(tb.base+path),
		chromedp.Poll[chromedp.Void](`document.body.dataset.ready === "true" || !document.getElementById("auth").hidden`))
}

// login opens path, is asked for a token and gives it.
func (tb *tab) login(t *testing.T, path, token string) {
	t.Helper()
	tb.do(t, "login at "+path, chromedp.Navigate(tb.base+path),
		chromedp.WaitVisible(chromedp.CSS(`#token-form`)),
		chromedp.SendKeys(chromedp.CSS(`#token-input`), token),
		chromedp.Click(chromedp.CSS(`#token-submit`)),
		chromedp.Poll[chromedp.Void](`document.body.dataset.ready === "true" && document.getElementById("auth").hidden`))
}

// until waits for a JavaScript expression to be true: the pages refresh
// every two seconds, so what a test changed shows within a few refreshes.
// A page that navigates meanwhile (a form sent) ends a poll early; it is
// polled again on the new page.
func (tb *tab) until(t *testing.T, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(40 * time.Second)
	for {
		ctx, cancel := context.WithDeadline(tb.ctx, deadline)
		err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(time.Until(deadline))))
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) || !strings.Contains(err.Error(), "navigated") && !strings.Contains(err.Error(), "context") {
			t.Fatalf("%s (%s): %v\npage: %s", what, tb.name, err, tb.text(t))
		}
	}
}

// eval evaluates a JavaScript expression.
func eval[T any](t *testing.T, tb *tab, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v\npage: %s", expr, err, tb.text(t))
	}
	return v
}

// text is the page's visible text, for failure messages.
func (tb *tab) text(t *testing.T) string {
	ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return s
}

// outputDir is where the screenshots go: $QUEEN_TEST_OUTPUT, else
// testdata/output beside this package's sources (ignored by git).
func outputDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("QUEEN_TEST_OUTPUT")
	if dir == "" {
		dir = filepath.Join("testdata", "output")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// screenshot writes the page as name.png under outputDir: the viewport
// made as tall as the page's content for the picture, then set back.
func (tb *tab) screenshot(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 20*time.Second)
	defer cancel()
	height := eval[float64](t, tb, `Math.ceil(document.body.getBoundingClientRect().bottom) + 8`)
	height = min(max(height, 200), 4000)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, int64(height))); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 860)); err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(outputDir(t), name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
