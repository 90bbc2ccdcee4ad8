package main

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The pipeline mode against a real bridge: what is pushed to A is
// forwarded to B in transactions, each message exactly once, and the report
// has the forwarded rate and CPU per forwarded item.
func TestPipelineModeForwardsWhatItPushed(t *testing.T) {
	br := startBridge(t, "b")
	for _, transport := range []string{"nats", "http"} {
		o := br.reach(t, options{transport: transport, clients: 3, items: 10, partitions: 5, queues: 2, payload: 100,
			duration: 500 * time.Millisecond, run: "p-" + transport, consumers: 2, consumeBatch: 20, consumePartitions: 1, consumeGroup: "stage",
			queuePrefix: "a-" + transport + ".q", groups: 1, pipelineTo: "b-" + transport + ".q"})
		report := consumeReport(t, o)
		pushed := regexp.MustCompile(`pushed +(\d+) \(`).FindStringSubmatch(report)
		left := regexp.MustCompile(`after the push stopped, (\d+) left`).FindStringSubmatch(report)
		if pushed == nil || pushed[1] == "0" || left == nil ||
			!strings.Contains(report, "pipeline   ") || !strings.Contains(report, "cpu per forwarded item: bridge") || strings.Contains(report, "errors     ") {
			t.Fatalf("%s report:\n%s", transport, report)
		}
		want, _ := strconv.ParseInt(pushed[1], 10, 64)
		// B holds each forwarded message once: a fresh group drains exactly
		// what was pushed to A.
		b := o
		b.queuePrefix, b.pipelineTo, b.consumeOnly, b.consumeGroup, b.duration = o.pipelineTo, "", true, "check", 300*time.Millisecond
		var got int64
		for deadline := time.Now().Add(time.Minute); got < want; {
			if time.Now().After(deadline) {
				t.Fatalf("%s: B gave %d of %d", transport, got, want)
			}
			r, err := runConsume(context.Background(), b, &strings.Builder{})
			if err != nil {
				t.Fatal(err)
			}
			got += r.acked[0]
		}
		if r, err := runConsume(context.Background(), b, &strings.Builder{}); err != nil || got+r.acked[0] != want {
			t.Fatalf("%s: B holds more than was pushed to A: %d+ of %d (%v)", transport, got, want, err)
		}
	}
}
