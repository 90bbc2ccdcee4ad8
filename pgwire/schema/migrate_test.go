package schema_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/pgwire/schema"
)

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
	dsn := testenv.NewDatabase(t)
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

// Every function of the queen schema has its file in functions/, named after
// it, and there is no file without its function: the files are where a
// reader finds each function's current text.
func TestEveryFunctionIsAFile(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	rows, err := db.Pool().Query(context.Background(),
		`SELECT DISTINCT proname FROM pg_proc WHERE pronamespace = 'queen'::regnamespace ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	inDB, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("functions")
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, strings.TrimSuffix(e.Name(), ".sql"))
	}
	if d := lineDiff(inDB, files); d != "" {
		t.Fatalf("functions in the database (-) without a file, files (+) without a function:\n%s", d)
	}
}

// functionSource is the body of queen.name as the database holds it.
func functionSource(t *testing.T, db *pgwire.DB, name string) string {
	t.Helper()
	var src string
	if err := db.Pool().QueryRow(context.Background(), `SELECT prosrc FROM pg_proc
		WHERE pronamespace = 'queen'::regnamespace AND proname = $1`, name).Scan(&src); err != nil {
		t.Fatal(err)
	}
	return src
}

// A function file whose text changed is applied by the next migration; one
// whose text did not is left alone; and a bridge that does not know every
// applied migration (an older one) applies none, so that it cannot put back
// the texts a newer bridge replaced.
func TestChangedFunctionFileIsApplied(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	const marker = "-- a text this test wrote"
	edit := func(name, sql string) string {
		if name != "consumer_option_v1" {
			return sql
		}
		return strings.Replace(sql, "ELSE p_default END", "ELSE p_default END "+marker, 1)
	}
	applied := func() map[string]string {
		rows, err := db.Pool().Query(ctx, `SELECT name, sha256 || applied_at::text FROM queen.schema_functions`)
		if err != nil {
			t.Fatal(err)
		}
		m, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (kv [2]string, err error) { return kv, r.Scan(&kv[0], &kv[1]) })
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, kv := range m {
			out[kv[0]] = kv[1]
		}
		return out
	}
	before := applied()
	if err := schema.MigrateEdited(ctx, db.Pool(), edit); err != nil {
		t.Fatal(err)
	}
	if src := functionSource(t, db, "consumer_option_v1"); !strings.Contains(src, marker) {
		t.Fatalf("the changed file was not applied: %s", src)
	}
	after := applied()
	for name, rec := range before {
		if changed := after[name] != rec; changed != (name == "consumer_option_v1") {
			t.Fatalf("%s: recorded %q, then %q", name, rec, after[name])
		}
	}

	// A newer bridge applied migration 9999: this one is older, and its
	// texts (here: the files as committed) stay out.
	if _, err := db.Pool().Exec(ctx, `INSERT INTO queen.schema_migrations (version, name) VALUES (9999, '9999_newer.sql')`); err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if src := functionSource(t, db, "consumer_option_v1"); !strings.Contains(src, marker) {
		t.Fatalf("an older bridge put its function text back: %s", src)
	}
	if _, err := db.Pool().Exec(ctx, `DELETE FROM queen.schema_migrations WHERE version = 9999`); err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if src := functionSource(t, db, "consumer_option_v1"); strings.Contains(src, marker) {
		t.Fatalf("the committed text was not applied again: %s", src)
	}
}

// A function a migration dropped (to make it anew with another result type)
// is made again from its file even though its text was recorded.
func TestDroppedFunctionIsMadeAgain(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()
	if _, err := db.Pool().Exec(ctx, `DROP FUNCTION queen.log_segment_at_v1(bigint, bigint)`); err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SegmentAt(ctx, 1, 1); !errors.Is(err, pgwire.ErrSegmentGone) {
		t.Fatalf("SegmentAt after the function was made again: %v", err)
	}
}
