package main

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// The consume mode against a real bridge: everything pushed is consumed
// (the drain ends with nothing left), the report has every figure, and a
// consume-only run afterwards finds nothing left to consume.
func TestConsumeModeDrainsWhatItPushed(t *testing.T) {
	bin := testkit.BuildBridge(t, "../queen-bridge")
	addr := testkit.FreeAddr(t)
	prefix := "b" + strconv.FormatInt(time.Now().UnixNano()%1_000_000, 10)
	dsn := testenv.NewDatabase(t)
	p := testkit.StartBridge(t, bin, "QUEEN_NATS_URL="+testenv.NATSURL(t), "QUEEN_NATS_PREFIX="+prefix, "QUEEN_PG_DSN="+dsn,
		"QUEEN_HTTP_ADDR="+addr, "QUEEN_DATA_DIR="+t.TempDir())
	defer func() { _ = p.Stop(t, syscall.SIGTERM) }()
	for _, transport := range []string{"nats", "http"} {
		var out strings.Builder
		o := options{target: "bridge", transport: transport, natsURL: testenv.NATSURL(t), prefix: prefix, httpAddr: addr,
			metricsURL: "http://" + addr + "/metrics/prometheus", pgDSN: dsn, clients: 3, items: 10, partitions: 7, queues: 1, payload: 100,
			duration: 500 * time.Millisecond, run: "t-" + transport, consumers: 3, consumeBatch: 20, consumePartitions: 1, consumeGroup: "g-" + transport, queuePrefix: "bench-" + transport + ".q"}
		if err := runConsume(context.Background(), o, &out); err != nil {
			t.Fatal(err)
		}
		report := out.String()
		left := regexp.MustCompile(`after the push stopped, (\d+) left`).FindStringSubmatch(report)
		pushed := regexp.MustCompile(`pushed +(\d+) \(`).FindStringSubmatch(report)
		if left == nil || pushed == nil || pushed[1] == "0" || !strings.Contains(report, "push-to-delivery p50") ||
			!strings.Contains(report, "cpu/item   per pushed + consumed item: bridge") || strings.Contains(report, "errors     ") {
			t.Fatalf("%s report:\n%s", transport, report)
		}
		// The drain finished: the next run of the same group finds nothing.
		var again strings.Builder
		o.consumeOnly, o.duration = true, 300*time.Millisecond
		if err := runConsume(context.Background(), o, &again); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(again.String(), "consumed   0 (") {
			t.Fatalf("%s: after the drain:\n%s", transport, again.String())
		}
	}
}
