package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// binary builds queen-bridge.
func binary(t *testing.T) string { return testkit.BuildBridge(t, ".") }

func freeAddr(t *testing.T) string { return testkit.FreeAddr(t) }

// running is a started queen-bridge process with its HTTP and NATS
// addresses.
type running struct {
	*testkit.Process
	http string
	nats string
}

// startBinary runs the binary on ports the kernel picks (a port found free
// and handed over could be taken by another test's process in between) and
// reads the addresses from its ready line.
func startBinary(t *testing.T, bin string, env ...string) *running {
	t.Helper()
	r := &running{}
	r.Process = testkit.StartBridge(t, bin, append([]string{"QUEEN_HTTP_ADDR=127.0.0.1:0", "QUEEN_NATS_LISTEN=127.0.0.1:-1"}, env...)...)
	t.Cleanup(func() {
		if t.Failed() { // what the bridge said is the first thing a failure needs
			lines := strings.Split(strings.TrimSpace(r.Logs()), "\n")
			var bad []string
			for _, l := range lines {
				if strings.Contains(l, `"level":"warn"`) || strings.Contains(l, `"level":"error"`) {
					bad = append(bad, l)
				}
			}
			t.Logf("a bridge's warnings and errors:\n%s\nthe last lines of its log:\n%s",
				strings.Join(bad[:min(len(bad), 40)], "\n"), strings.Join(lines[max(len(lines)-20, 0):], "\n"))
		}
	})
	for _, line := range strings.Split(r.Logs(), "\n") {
		var ready struct{ Message, HTTP, NATS string }
		if json.Unmarshal([]byte(line), &ready) != nil || ready.Message != "queen-bridge ready" {
			continue
		}
		r.http = ready.HTTP
		if u, ok := strings.CutPrefix(ready.NATS, "embedded nats://"); ok {
			r.nats = u
		}
		return r
	}
	t.Fatalf("no ready line:\n%s", r.Logs())
	return nil
}

// interrupt sends SIGINT and waits for a clean exit.
func (r *running) interrupt(t *testing.T) {
	t.Helper()
	if err := r.Stop(t, syscall.SIGINT); err != nil {
		t.Fatalf("exit after SIGINT: %v\n%s", err, r.Logs())
	}
}

// pushBoth pushes one message over HTTP, then one over NATS, to demo/Default
// and returns the offset the HTTP one got.
func pushBoth(t *testing.T, r *running) int64 {
	t.Helper()
	resp, err := http.Post("http://"+r.http+"/api/v1/push", "application/json",
		strings.NewReader(`{"items":[{"queue":"demo","payload":{"hello":"http"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var hr []struct {
		Status string
		Offset int64
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &hr) != nil || hr[0].Status != "queued" {
		t.Fatalf("HTTP push: %d %s", resp.StatusCode, body)
	}
	nc, err := nats.Connect("nats://" + r.nats)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	msg, err := nc.Request("queen.v1.push", []byte(`{"items":[{"queue":"demo","payload":{"hello":"nats"}}]}`), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var rs []struct{ Status string }
	if err := json.Unmarshal(msg.Data, &rs); err != nil || len(rs) != 1 || rs[0].Status != "queued" {
		t.Fatalf("NATS push: %s", msg.Data)
	}
	return hr[0].Offset
}

// The bridge reaches its embedded NATS server in-process: the only TCP
// connection the server has accepted is this test's own client (a bridge
// connected over loopback would add a second).
func TestBridgeConnectsToEmbeddedNATSInProcess(t *testing.T) {
	bin := binary(t)
	r := startBinary(t, bin, "QUEEN_PG_DSN="+testenv.NewDatabase(t), "QUEEN_DATA_DIR="+t.TempDir())
	defer r.interrupt(t)
	pushBoth(t, r) // the bridge answers over NATS
	nc, err := nats.Connect("nats://" + r.nats)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	_, portText, _ := strings.Cut(r.nats, ":")
	port, _ := strconv.Atoi(portText)
	// pushBoth's client may still be closing: wait for the count to settle.
	deadline := time.Now().Add(10 * time.Second)
	for n := acceptedTCP(t, port); n != 1; n = acceptedTCP(t, port) {
		if time.Now().After(deadline) {
			t.Fatalf("%d established TCP connections accepted on the NATS port %d, want 1 (this test's)", n, port)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// acceptedTCP counts established TCP sockets whose local port is port.
func acceptedTCP(t *testing.T, port int) int {
	t.Helper()
	n := 0
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 4 || fields[3] != "01" { // 01: ESTABLISHED
				continue
			}
			_, local, _ := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseUint(local, 16, 32); err == nil && int(p) == port {
				n++
			}
		}
	}
	return n
}

func TestBinaryWithExternalPostgres(t *testing.T) {
	bin := binary(t)
	r := startBinary(t, bin, "QUEEN_PG_DSN="+testenv.NewDatabase(t), "QUEEN_DATA_DIR="+t.TempDir())
	pushBoth(t, r)
	r.interrupt(t)
	if !strings.Contains(r.Logs(), `"message":"stopped"`) {
		t.Fatalf("no clean stop in the log:\n%s", r.Logs())
	}
}

// With no QUEEN_PG_DSN the binary runs its own PostgreSQL under the data
// dir, keeps it across restarts, and leaves no postmaster behind.
func TestBinaryWithEmbeddedPostgres(t *testing.T) {
	bin := binary(t)
	dir, err := os.MkdirTemp("", "queen-bin-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ {
		r := startBinary(t, bin, "QUEEN_DATA_DIR="+dir)
		if off := pushBoth(t, r); off != int64(1+2*round) {
			t.Fatalf("round %d: offset %d, want %d (the cluster must survive a restart)", round, off, 1+2*round)
		}
		pidText, err := os.ReadFile(filepath.Join(dir, "pg", "postmaster.pid"))
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.SplitN(string(pidText), "\n", 2)[0])
		r.interrupt(t)
		if syscall.Kill(pid, 0) == nil {
			t.Fatalf("round %d: postmaster %d still running after the bridge exited", round, pid)
		}
	}
}

func TestHelpListsEverySetting(t *testing.T) {
	out, err := exec.Command(binary(t), "-h").CombinedOutput()
	if err != nil {
		t.Fatalf("-h: %v\n%s", err, out)
	}
	for _, s := range (&config{}).settings() {
		if !strings.Contains(string(out), s.env) || !strings.Contains(string(out), "-"+flagName(s.env)) {
			t.Errorf("-h does not list %s", s.env)
		}
	}
}

func TestFlagsOverrideEnvironment(t *testing.T) {
	t.Setenv("QUEEN_BUNDLE_MAX", "7")
	t.Setenv("QUEEN_HTTP_ADDR", "off")
	c, err := load([]string{"-bundle-max", "9"})
	if err != nil {
		t.Fatal(err)
	}
	if c.bundleMax != 9 || c.httpAddr != "off" || c.spoolDir != filepath.Join("./data", "spool") || c.inFlightMax != 16 || c.bundleMaxBytes != 8<<20 {
		t.Fatalf("config %+v", c)
	}
	if c.gcPercent != 400 {
		t.Fatalf("GC target %d by default", c.gcPercent)
	}
	if !c.adaptiveProcs {
		t.Fatal("GOMAXPROCS does not follow the load by default")
	}
	if c, err := load([]string{"-adaptive-procs", "0"}); err != nil || c.adaptiveProcs {
		t.Fatalf("-adaptive-procs 0: %v %v", c.adaptiveProcs, err)
	}
	if _, err := load([]string{"-gc-percent", "5"}); err == nil || !strings.Contains(err.Error(), "QUEEN_GC_PERCENT") {
		t.Fatalf("a GC target that would collect all the time must be refused: %v", err)
	}
	t.Setenv("QUEEN_FUSION_SHARDS", "many")
	if _, err := load(nil); err == nil || !strings.Contains(err.Error(), "QUEEN_FUSION_SHARDS") {
		t.Fatalf("a bad number must name its variable: %v", err)
	}
}
