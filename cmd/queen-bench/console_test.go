package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"testing"
	"time"
)

// The console mode against a real bridge: it fills the queues it names,
// every route an open console reads answers, PostgreSQL's CPU is read,
// and the first queue's page has the group it made.
func TestConsoleModeReadsWhatAnOpenConsoleReads(t *testing.T) {
	br := startBridge(t, "c")
	o := br.reach(t, options{transport: "http", queues: 2, partitions: 6, duration: 300 * time.Millisecond, run: "c",
		queuePrefix: "console.q", console: true, consoleEvery: 100 * time.Millisecond})
	var out bytes.Buffer
	if err := benchMain(context.Background(), o, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	report := out.String()
	for _, want := range []string{
		`GET /api/v1/status/queues/console.q0: 1 answers, `,
		`GET /api/v1/bridge/overview: [1-9]\d* answers, [\d.]+ ms mean\n`,
		`GET /api/v1/resources/queues: [1-9]\d* answers, [\d.]+ ms mean\n`,
		`GET /api/v1/resources/queues/console.q0/consumers: [1-9]\d* answers, [\d.]+ ms mean\n`,
		`PostgreSQL CPU, % of one core: console open [\d.]+ %, nothing open n/a, `,
	} {
		if !regexp.MustCompile(want).MatchString(report) {
			t.Fatalf("the report has no %q:\n%s", want, report)
		}
	}
	resp, err := http.Get("http://" + br.addr + "/api/v1/resources/queues/console.q0/consumers")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		Partitions []struct{ LastOffset int64 }
		Groups     []struct {
			Name       string
			Partitions []struct{ Cursor int64 }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	if len(c.Partitions) != 3 || len(c.Groups) != 1 || c.Groups[0].Name != "console-bench" || len(c.Groups[0].Partitions) != 3 {
		t.Fatalf("console.q0 after the run: %+v, want 3 partitions and group console-bench on each", c)
	}
	for _, p := range c.Groups[0].Partitions {
		if p.Cursor != 1 {
			t.Fatalf("console-bench's cursors: %+v, want 1 on each partition (one pop with auto-acknowledgement)", c.Groups[0].Partitions)
		}
	}
}
