package cursors

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/internal/testkit"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/storage"
)

// The marks' tests are inside the package: what the marks decide (which
// partitions a pop tries, what a claim's outcome changes) is kept in
// unexported maps. PostgreSQL is real.
func TestMain(m *testing.M) { testenv.Main(m) }

// newMarks makes marks over a migrated queen database of the test's own.
func newMarks(t testing.TB) (*pgwire.DB, *Marks) {
	t.Helper()
	db := testkit.OpenDB(t, testenv.NewDatabase(t), 4)
	m, err := NewMarks(db)
	if err != nil {
		t.Fatal(err)
	}
	return db, m
}

var (
	push  = testkit.PushSegment
	txids = testkit.TxIDs
)

func setOption(t testing.TB, db *pgwire.DB, queue, key string, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	if _, err := db.ConfigureQueue(context.Background(), [16]byte{}, queue, storage.QueueUpdate{Other: map[string]json.RawMessage{key: b}}); err != nil {
		t.Fatal(err)
	}
}
