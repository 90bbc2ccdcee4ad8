package main

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The consume mode against a real bridge: everything pushed is consumed
// (the drain ends with nothing left), the report has every figure, and a
// consume-only run afterwards finds nothing left to consume. On a
// schedule, exactly the scheduled items are pushed; with several groups,
// each group gets every message once.
func TestConsumeModeDrainsWhatItPushed(t *testing.T) {
	br := startBridge(t, "b")
	base := func(transport, name string) options {
		return br.reach(t, options{transport: transport, clients: 3, items: 10, partitions: 7, queues: 1, payload: 100,
			duration: 500 * time.Millisecond, run: "t-" + name, consumers: 3, consumeBatch: 20, consumePartitions: 1, consumeGroup: "g-" + name,
			queuePrefix: "bench-" + name + ".q", groups: 1})
	}
	for _, transport := range []string{"nats", "http"} {
		o := base(transport, transport)
		report := consumeReport(t, o)
		left := regexp.MustCompile(`after the push stopped, (\d+) left`).FindStringSubmatch(report)
		pushed := regexp.MustCompile(`pushed +(\d+) \(`).FindStringSubmatch(report)
		if left == nil || pushed == nil || pushed[1] == "0" || !strings.Contains(report, "push-to-delivery p50") ||
			!strings.Contains(report, "cpu/item   per pushed + consumed item: bridge") || strings.Contains(report, "errors     ") ||
			strings.Contains(report, "late ") || !strings.Contains(report, "from the send time") {
			t.Fatalf("%s report:\n%s", transport, report)
		}
		// The bridge's hot tail served some of the pops, never more than were made.
		tail := regexp.MustCompile(`tail +(\d+) pops served from the bridges' hot tails \(\d+% of (\d+)\), (\d+) misses`).FindStringSubmatch(report)
		if tail == nil {
			t.Fatalf("%s report has no tail line:\n%s", transport, report)
		}
		if hits, pops := atoi(t, tail[1]), atoi(t, tail[2]); hits > pops {
			t.Fatalf("%s: %d tail hits of %d pops:\n%s", transport, hits, pops, report)
		}
		// The drain finished: the next run of the same group finds nothing.
		o.consumeOnly, o.duration = true, 300*time.Millisecond
		if again := consumeReport(t, o); !strings.Contains(again, "consumed   0 (") {
			t.Fatalf("%s: after the drain:\n%s", transport, again)
		}
	}

	// 200 items/s in requests of 10 for a second: 20 requests, due 50 ms
	// apart, far below what three closed-loop clients push; two groups.
	o := base("nats", "rate")
	o.rate, o.duration, o.groups = 200, time.Second, 2
	report := consumeReport(t, o)
	if !strings.Contains(report, "pushed     200 (") ||
		!regexp.MustCompile(`late +\d+ of 20 requests sent more than 1ms after their scheduled time`).MatchString(report) ||
		!strings.Contains(report, "group      g-rate-0 ") || !strings.Contains(report, "group      g-rate-1 ") ||
		!strings.Contains(report, "from the scheduled send time") || !strings.Contains(report, "cpu/deliv  per delivery (2 groups, ") ||
		strings.Contains(report, "errors     ") {
		t.Fatalf("rate and groups report:\n%s", report)
	}
	o.rate, o.consumeOnly, o.duration = 0, true, 300*time.Millisecond
	if again := consumeReport(t, o); !strings.Contains(again, "consumed   0 (") {
		t.Fatalf("both groups must have drained:\n%s", again)
	}
	// Fresh groups on the same queue each get the same 200 messages, no
	// more: consume-only runs until both have them all.
	o.consumeGroup = "fresh"
	got := [2]int64{}
	for deadline := time.Now().Add(time.Minute); got != [2]int64{200, 200}; {
		if time.Now().After(deadline) {
			t.Fatalf("fresh groups consumed %v of 200 each", got)
		}
		r, err := runConsume(context.Background(), o, &strings.Builder{})
		if err != nil {
			t.Fatal(err)
		}
		got[0], got[1] = got[0]+r.acked[0], got[1]+r.acked[1]
		if got[0] > 200 || got[1] > 200 {
			t.Fatalf("fresh groups consumed %v, more than the 200 pushed", got)
		}
	}
}

// consumeReport runs the consume mode and answers its report.
func consumeReport(t *testing.T, o options) string {
	t.Helper()
	var out strings.Builder
	if _, err := runConsume(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
