package client_test

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// bridgeBinary builds queen-bridge once per test.
func bridgeBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "queen-bridge")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/queen-bridge").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// bridgeProc is a running queen-bridge on the test binary's NATS (so that
// clients stay connected across its restarts) and a database of its own.
type bridgeProc struct {
	cmd    *exec.Cmd
	done   chan error
	http   string
	prefix string
	dsn    string
	env    []string
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func newBridge(t testing.TB, bin string) *bridgeProc {
	t.Helper()
	b := &bridgeProc{http: freeAddr(t), prefix: "c" + strings.NewReplacer("/", "", "Test", "", "Benchmark", "").Replace(t.Name()), dsn: testenv.NewDatabase(t)}
	b.env = []string{"QUEEN_NATS_URL=" + testenv.NATSURL(t), "QUEEN_NATS_PREFIX=" + b.prefix, "QUEEN_PG_DSN=" + b.dsn,
		"QUEEN_HTTP_ADDR=" + b.http, "QUEEN_DATA_DIR=" + t.TempDir(), "QUEEN_LOG_LEVEL=warn"}
	b.start(t, bin)
	t.Cleanup(func() { b.stop(t) })
	return b
}

func (b *bridgeProc) start(t testing.TB, bin string) {
	t.Helper()
	b.cmd = exec.Command(bin)
	b.cmd.Env = append(os.Environ(), b.env...)
	b.cmd.Env = append(b.cmd.Env, "QUEEN_LOG_LEVEL=info")
	stderr, err := b.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b.done = make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		signalled := false
		for sc.Scan() {
			if !signalled && strings.Contains(sc.Text(), "queen-bridge ready") {
				signalled = true
				close(ready)
			}
		}
		b.done <- b.cmd.Wait()
	}()
	select {
	case <-ready:
	case err := <-b.done:
		t.Fatalf("queen-bridge exited early: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("queen-bridge not ready")
	}
}

// stop sends SIGTERM (a graceful stop) and waits; idempotent.
func (b *bridgeProc) stop(t testing.TB) {
	if b.cmd == nil {
		return
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(time.Minute):
		_ = b.cmd.Process.Kill()
		<-b.done
	}
	b.cmd = nil
}
