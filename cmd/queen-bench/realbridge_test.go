package main

import (
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

// realBridge is a queen-bridge the tests run queen-bench against: on the
// test binary's NATS under a prefix of its own, with a database of its own.
type realBridge struct {
	addr, prefix, dsn string
}

// startBridge builds and starts a bridge, stopped when the test ends;
// letter starts its NATS prefix.
func startBridge(t *testing.T, letter string) realBridge {
	t.Helper()
	bin := testkit.BuildBridge(t, "../queen-bridge")
	b := realBridge{addr: testkit.FreeAddr(t), prefix: letter + strconv.FormatInt(time.Now().UnixNano()%1_000_000, 10), dsn: testenv.NewDatabase(t)}
	p := testkit.StartBridge(t, bin, "QUEEN_NATS_URL="+testenv.NATSURL(t), "QUEEN_NATS_PREFIX="+b.prefix, "QUEEN_PG_DSN="+b.dsn,
		"QUEEN_HTTP_ADDR="+b.addr, "QUEEN_DATA_DIR="+t.TempDir())
	t.Cleanup(func() { _ = p.Stop(t, syscall.SIGTERM) })
	return b
}

// reach is o aimed at b: the bridge target over o's transport, with b's
// metrics (for the bridge's CPU) and database (for PostgreSQL's).
func (b realBridge) reach(t *testing.T, o options) options {
	o.target, o.natsURL, o.prefix, o.httpAddr = "bridge", testenv.NATSURL(t), b.prefix, b.addr
	o.metricsURL, o.pgDSN = "http://"+b.addr+"/metrics/prometheus", b.dsn
	return o
}
