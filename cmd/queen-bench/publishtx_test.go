package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// The transactional publish load runs its three shapes and the latency
// phase against a bridge that relays its database, and every message the
// publish shapes committed is stored (it waits for that before it reports).
func TestPublishTxLoad(t *testing.T) {
	b := startBridge(t, "p")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, b.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	testkit.WaitFor(t, "the relay to install queen.publish", 90*time.Second, func() bool {
		var ok bool
		err := conn.QueryRow(ctx, `SELECT to_regprocedure('queen.publish(text,text,jsonb,text,text)') IS NOT NULL`).Scan(&ok)
		return err == nil && ok
	})
	o := b.reach(t, options{clients: 4, partitions: 4, payload: 200, duration: 300 * time.Millisecond, queuePrefix: "bench.q", run: "t1", publishTx: true})
	var out bytes.Buffer
	if err := benchMain(ctx, o, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, shape := range publishShapes {
		m := regexp.MustCompile(`(?m)^` + shape + ` +(\d+) tx/s`).FindStringSubmatch(out.String())
		if m == nil || m[1] == "0" {
			t.Fatalf("no %s line with transactions:\n%s", shape, out.String())
		}
	}
	m := regexp.MustCompile(`commit-to-stored at \d+ tx/s .*\((\d+) messages\)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no commit-to-stored line:\n%s", out.String())
	}
	if n, _ := strconv.Atoi(m[1]); n == 0 {
		t.Fatalf("commit-to-stored measured nothing:\n%s", out.String())
	}
	t.Log(out.String())
	var outbox int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM queen_bench.outbox`).Scan(&outbox); err != nil || outbox == 0 {
		t.Fatalf("outbox rows %d (%v)", outbox, err)
	}
}

// Without -pg-dsn, or on a database no bridge relays, it refuses and says
// why.
func TestPublishTxRefusals(t *testing.T) {
	ctx := context.Background()
	o := options{clients: 1, partitions: 1, duration: time.Millisecond, publishTx: true, metricsURL: ""}
	if err := benchMain(ctx, o, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "-pg-dsn") {
		t.Fatalf("without -pg-dsn: %v", err)
	}
	o.pgDSN = testenv.NewDatabase(t)
	if err := benchMain(ctx, o, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "queen.publish is not installed") {
		t.Fatalf("a database nobody relays: %v", err)
	}
}
