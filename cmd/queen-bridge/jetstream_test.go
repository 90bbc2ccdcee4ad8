package main

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// Stream definitions that overlap each other or the bridge's own subjects
// stop the binary before it starts anything, naming both sides.
func TestJetStreamDefinitionsCheckedAtStart(t *testing.T) {
	bin := binary(t)
	for _, c := range []struct {
		args, env []string
		want      []string
	}{
		{env: []string{"QUEEN_JETSTREAM=ORDERS=orders.>,EU=orders.eu"}, want: []string{"QUEEN_JETSTREAM", "stream EU filter orders.eu", "stream ORDERS filter orders.>"}},
		{args: []string{"-jetstream", "Q=*.v1.push"}, want: []string{"stream Q filter *.v1.push", "the bridge's own subjects queen.>"}},
		{args: []string{"-jetstream", "Q=jobs.>", "-nats-prefix", "jobs"}, want: []string{"stream Q filter jobs.>", "jobs.>"}},
		{env: []string{"QUEEN_JETSTREAM=ORDERS"}, want: []string{"QUEEN_JETSTREAM", "NAME=FILTER"}},
	} {
		cmd := exec.Command(bin, c.args...)
		cmd.Env = append(cmd.Environ(), c.env...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 {
			t.Fatalf("%v %v: %v\n%s", c.args, c.env, err, out)
		}
		for _, w := range c.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%v %v: the error does not name %q:\n%s", c.args, c.env, w, out)
			}
		}
	}
}

// The binary lists its streams in the ready line and answers a JetStream
// publish on them.
func TestBinaryTakesJetStreamPublishes(t *testing.T) {
	r := startBinary(t, binary(t), "QUEEN_PG_DSN="+testenv.NewDatabase(t), "QUEEN_DATA_DIR="+t.TempDir(),
		"QUEEN_JETSTREAM=ORDERS=orders.>,AUDIT=audit.*.events")
	defer r.interrupt(t)
	var ready struct{ JetStream string }
	for _, line := range strings.Split(r.Logs(), "\n") {
		if strings.Contains(line, "queen-bridge ready") {
			if err := json.Unmarshal([]byte(line), &ready); err != nil {
				t.Fatal(err)
			}
		}
	}
	if ready.JetStream != "ORDERS=orders.>,AUDIT=audit.*.events" {
		t.Fatalf("the ready line lists jetstream %q:\n%s", ready.JetStream, r.Logs())
	}
	_, j := testkit.JetStream(t, "nats://"+r.nats)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []struct {
		subject, stream string
	}{{"orders.eu.42", "ORDERS"}, {"audit.login.events", "AUDIT"}, {"orders.eu.42", "ORDERS"}} {
		ack, err := j.Publish(ctx, c.subject, []byte(`{"hello":"jetstream"}`))
		if err != nil || ack.Stream != c.stream {
			t.Fatalf("%s: %+v %v", c.subject, ack, err)
		}
	}
	ack, err := j.Publish(ctx, "orders.eu.42", []byte(`{}`))
	if err != nil || ack.Sequence != 3 {
		t.Fatalf("the third on orders.eu.42 (partition eu.42): %+v %v", ack, err)
	}
}
