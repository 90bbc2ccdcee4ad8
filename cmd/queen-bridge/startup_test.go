package main

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testenv"
)

// failStart runs the binary, which must exit non-zero by itself, and
// answers what it wrote. The deadline is the test's bound for a bridge
// that never exits, not a measure of how fast it fails.
func failStart(t *testing.T, bin string, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || ctx.Err() != nil {
		t.Fatalf("the bridge did not exit with an error (%v):\n%s", err, out)
	}
	if exit.ExitCode() == 0 {
		t.Fatalf("exit code 0:\n%s", out)
	}
	return string(out)
}

// A NATS address another process listens on stops the bridge with the
// address and "address already in use", and the setting that changes it.
func TestStartOnBusyNATSPort(t *testing.T) {
	bin := binary(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	out := failStart(t, bin, "QUEEN_NATS_LISTEN="+l.Addr().String(), "QUEEN_HTTP_ADDR=127.0.0.1:0",
		"QUEEN_PG_DSN="+testenv.NewDatabase(t), "QUEEN_DATA_DIR="+t.TempDir())
	for _, want := range []string{l.Addr().String(), "address already in use", "QUEEN_NATS_LISTEN"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the failure does not say %q:\n%s", want, out)
		}
	}
}

// A second bridge on the data directory of a running one stops with the
// directory and that another process holds it; the first one goes on.
func TestSecondBridgeOnTheSameDataDir(t *testing.T) {
	bin := binary(t)
	dir := reachableDir(t)
	first := startBinary(t, bin, "QUEEN_DATA_DIR="+dir)
	defer first.interrupt(t)
	out := failStart(t, bin, "QUEEN_DATA_DIR="+dir, "QUEEN_HTTP_ADDR=127.0.0.1:0", "QUEEN_NATS_LISTEN=127.0.0.1:-1")
	for _, want := range []string{filepath.Join(dir, "pg"), "held by another process", "QUEEN_DATA_DIR"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the failure does not say %q:\n%s", want, out)
		}
	}
	pushBoth(t, first)
}

// reachableDir is a temporary directory the postgres account can reach
// when the tests run as root (t.TempDir's parents may not be searchable).
func reachableDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "queen-readme-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
