package testkit

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// BuildBridge builds cmd/queen-bridge (at dir, relative to the test's
// package) into the test's temporary directory.
func BuildBridge(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "queen-bridge")
	if out, err := exec.Command("go", "build", "-o", bin, dir).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// FreeAddr is a loopback address nothing listens on right now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Process is a running queen-bridge and its log. Done receives the exit
// once.
type Process struct {
	Cmd  *exec.Cmd
	Done chan error

	mu   sync.Mutex // guards logs: the reader goroutine appends, tests read
	logs strings.Builder
}

// Logs is what the process wrote to stderr so far.
func (p *Process) Logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// StartBridge runs bin with env added to this process's environment and
// waits for its ready line (at most two minutes).
func StartBridge(t testing.TB, bin string, env ...string) *Process {
	t.Helper()
	p := &Process{Cmd: exec.Command(bin), Done: make(chan error, 1)}
	p.Cmd.Env = append(os.Environ(), env...)
	stderr, err := p.Cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() { // owned by the process: ends when its stderr closes
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		signalled := false
		for sc.Scan() {
			p.mu.Lock()
			p.logs.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if !signalled && strings.Contains(sc.Text(), "queen-bridge ready") {
				signalled = true
				close(ready)
			}
		}
		p.Done <- p.Cmd.Wait()
	}()
	select {
	case <-ready:
	case err := <-p.Done:
		t.Fatalf("queen-bridge exited early (%v):\n%s", err, p.Logs())
	case <-time.After(2 * time.Minute):
		_ = p.Cmd.Process.Kill()
		t.Fatalf("queen-bridge not ready:\n%s", p.Logs())
	}
	return p
}

// Stop sends sig and waits (a minute at most, then kills) for the exit,
// which it returns.
func (p *Process) Stop(t testing.TB, sig os.Signal) error {
	t.Helper()
	if err := p.Cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.Done:
		return err
	case <-time.After(time.Minute):
		_ = p.Cmd.Process.Kill()
		<-p.Done
		t.Fatalf("no exit within a minute of %v:\n%s", sig, p.Logs())
		return nil
	}
}
