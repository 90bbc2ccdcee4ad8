package readside

import (
	"testing"

	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
)

// The read side's tests are inside the package: the park/wake loop is
// unexported, and what it decides (when a parked look looks again) is only
// visible there. PostgreSQL and NATS are real.
func TestMain(m *testing.M) { testenv.Main(m) }

// newDB opens a migrated queen database of the test's own.
func newDB(t testing.TB) *pgwire.DB { return testkit.OpenDB(t, testenv.NewDatabase(t), 8) }

var (
	push  = testkit.PushSegment
	txids = testkit.TxIDs
)

// startReads starts a Reads on db, stopped when the test ends.
func startReads(t testing.TB, cfg Config) *Reads {
	t.Helper()
	r, err := New(cfg)
	return testkit.Started(t, r, err)
}
