package schema_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// newDB opens a migrated queen database of its own for the test.
func newDB(t testing.TB) *pgwire.DB {
	t.Helper()
	return testkit.OpenDB(t, testenv.NewDatabase(t), 40)
}

var (
	write     = testkit.Write
	push      = testkit.Push
	count     = testkit.Count
	textRows  = testkit.TextRows
	txids     = testkit.TxIDs
	completed = testkit.Completed
)

// lease is a fresh lease id.
func lease() [16]byte { return uuid.New() }
