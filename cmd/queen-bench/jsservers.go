package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// jsTarget is where the JetStream consumer load runs: the bridge at -nats,
// or a real JetStream server this run started.
type jsTarget struct {
	name     string // bridge, always, default
	url      string
	fresh    bool                   // a server of this run's own: each mode makes the stream anew
	meterOf  options                // what the meter reads: the bridge's metrics and PostgreSQL, or the server's process
	serverOf func(cpuSplit) float64 // the server's share of a CPU split: the bridge's, or -server-pid's
	stop     func()
}

// startJSTarget readies target name: the bridge as it runs, or a
// nats-server with JetStream file storage in a process of its own (this
// binary with -serve-jetstream), so that its CPU is its own.
func startJSTarget(name string, o options, out io.Writer) (jsTarget, error) {
	if name == "bridge" {
		return jsTarget{name: name, url: o.natsURL, meterOf: options{target: "jetstream", metricsURL: o.metricsURL, pgDSN: o.pgDSN},
			serverOf: func(s cpuSplit) float64 { return s.bridge }, stop: func() {}}, nil
	}
	srv, err := startJSServer(name == "always")
	if err != nil {
		return jsTarget{}, fmt.Errorf("%s: %w", name, err)
	}
	fmt.Fprintf(out, "\n%s: nats-server with JetStream file storage (sync %s) at %s, pid %d, store %s\n", name, name, srv.url, srv.pid(), srv.dir)
	return jsServerTarget(name, srv.url, srv.pid(), srv.stop), nil
}

// jsServerTarget is a real JetStream server at url, in process pid (0: this
// one, whose CPU is then the client's).
func jsServerTarget(name, url string, pid int, stop func()) jsTarget {
	return jsTarget{name: name, url: url, fresh: true, meterOf: options{target: "jetstream", js: jsOptions{serverPID: pid}},
		serverOf: func(s cpuSplit) float64 { return s.server }, stop: stop}
}

// jsServer is a child process serving JetStream.
type jsServer struct {
	cmd    *exec.Cmd
	dir    string
	url    string
	exited chan struct{} // closed when the process has ended (its Wait returned)
}

func (s *jsServer) pid() int { return s.cmd.Process.Pid }

// startJSServer starts this binary with -serve-jetstream on a fresh
// directory and a free port, and waits for its ready line.
func startJSServer(syncAlways bool) (*jsServer, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "queen-bench-jetstream-")
	if err != nil {
		return nil, err
	}
	args := []string{"-serve-jetstream", dir + "/store", "-listen", "127.0.0.1:-1"}
	if syncAlways {
		args = append(args, "-sync-always")
	}
	log, err := os.Create(dir + "/server.log")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	defer log.Close() // the child holds its own descriptor
	s := &jsServer{cmd: exec.Command(self, args...), dir: dir, exited: make(chan struct{})}
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s -serve-jetstream: %w", self, err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	for deadline := time.Now().Add(30 * time.Second); s.url == ""; time.Sleep(20 * time.Millisecond) {
		text, _ := os.ReadFile(dir + "/server.log")
		if line, ok := readyLine(text); ok {
			s.url = line
			break
		}
		select {
		case <-s.exited:
			s.stop()
			return nil, fmt.Errorf("the JetStream server ended before it was ready: %s", text)
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("the JetStream server was not ready in 30s: %s", text)
		}
	}
	return s, nil
}

// readyLine finds the client URL in serveJetStream's ready line
// ("jetstream <url> pid …").
func readyLine(text []byte) (string, bool) {
	for _, line := range bytes.Split(text, []byte("\n")) {
		if f := strings.Fields(string(line)); len(f) >= 2 && f[0] == "jetstream" && strings.HasPrefix(f[1], "nats://") {
			return f[1], true
		}
	}
	return "", false
}

// stop interrupts the server, waits for it (killing it after 10 s) and
// removes its store.
func (s *jsServer) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	os.RemoveAll(s.dir)
}
