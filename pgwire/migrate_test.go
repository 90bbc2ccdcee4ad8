package pgwire_test

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/pgwire"
)

func newDBDSN(t testing.TB) string { return testenv.NewDatabase(t) }

// migrationFiles counts the SQL files the migrator embeds.
func migrationFiles(t testing.TB) int64 {
	entries, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(entries))
}

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	db := newDB(t) // migrated once
	for i := 0; i < 2; i++ {
		if err := db.Migrate(context.Background()); err != nil {
			t.Fatalf("migration run %d: %v", i+2, err)
		}
	}
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.schema_migrations`); n != migrationFiles(t) {
		t.Fatalf("%d migrations recorded, want %d", n, migrationFiles(t))
	}
}

// TestMigrateFromTwoProcessesAtOnce runs this test binary twice as helper
// processes that migrate one fresh database at the same moment.
func TestMigrateFromTwoProcessesAtOnce(t *testing.T) {
	t.Parallel()
	dsn := newDBDSN(t)
	var wg sync.WaitGroup
	outs := make([][]byte, 2)
	errs := make([]error, 2)
	for i := range outs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestMigrateHelperProcess$")
			cmd.Env = append(os.Environ(), "QUEEN_MIGRATE_HELPER_DSN="+dsn)
			outs[i], errs[i] = cmd.CombinedOutput()
		}(i)
	}
	wg.Wait()
	for i := range errs {
		if errs[i] != nil {
			t.Fatalf("process %d: %v\n%s", i, errs[i], outs[i])
		}
	}
	db, err := pgwire.Open(context.Background(), pgwire.Config{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n := count(t, db.Pool(), `SELECT count(*) FROM queen.schema_migrations`); n != migrationFiles(t) {
		t.Fatalf("%d migrations recorded, want %d", n, migrationFiles(t))
	}
	push(t, db, write("after", "p", "a"))
}

func TestMigrateHelperProcess(t *testing.T) {
	dsn := os.Getenv("QUEEN_MIGRATE_HELPER_DSN")
	if dsn == "" {
		t.Skip("helper for TestMigrateFromTwoProcessesAtOnce; runs only when re-executed by it")
	}
	db, err := pgwire.Open(context.Background(), pgwire.Config{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
}
