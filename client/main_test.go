package client_test

import (
	"strings"
	"syscall"
	"testing"

	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// bridgeBinary builds queen-bridge.
func bridgeBinary(t testing.TB) string { return testkit.BuildBridge(t, "../cmd/queen-bridge") }

// bridgeProc is a running queen-bridge on the test binary's NATS (so that
// clients stay connected across its restarts) and a database of its own.
type bridgeProc struct {
	proc   *testkit.Process
	http   string
	prefix string
	dsn    string
	env    []string
}

func newBridge(t testing.TB, bin string) *bridgeProc {
	t.Helper()
	return newBridgeOn(t, bin, testenv.NewDatabase(t))
}

// newBridgeOn is newBridge on the database dsn names (with the settings it
// carries: testenv.WithSetting).
func newBridgeOn(t testing.TB, bin, dsn string) *bridgeProc {
	t.Helper()
	b := &bridgeProc{http: testkit.FreeAddr(t), prefix: "c" + strings.NewReplacer("/", "", "Test", "", "Benchmark", "").Replace(t.Name()),
		dsn: dsn}
	b.env = []string{"QUEEN_NATS_URL=" + testenv.NATSURL(t), "QUEEN_NATS_PREFIX=" + b.prefix, "QUEEN_PG_DSN=" + b.dsn,
		"QUEEN_HTTP_ADDR=" + b.http, "QUEEN_DATA_DIR=" + t.TempDir()}
	b.start(t, bin)
	t.Cleanup(func() { b.stop(t) })
	return b
}

func (b *bridgeProc) start(t testing.TB, bin string) { b.proc = testkit.StartBridge(t, bin, b.env...) }

// stop stops the bridge gracefully (SIGTERM); idempotent.
func (b *bridgeProc) stop(t testing.TB) {
	if b.proc != nil {
		_ = b.proc.Stop(t, syscall.SIGTERM)
		b.proc = nil
	}
}
