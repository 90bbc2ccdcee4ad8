package schema_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/pgwire/schema"
	"github.com/queenbridge/queenbridge/segment"
)

var update = flag.Bool("update", false, "rewrite testdata/schema.txt and testdata/migrations.txt from what the tests find")

const schemaFile = "testdata/schema.txt"

// schemaQueries read the queen schema from the catalogs, one line per
// object, in a stable order. Functions are listed with their signature and
// settings and the SHA-256 of their body (the body itself is the function's
// file, pgwire/schema/functions).
var schemaQueries = []string{
	`SELECT 'table ' || c.relname || coalesce(' WITH (' || array_to_string(c.reloptions, ', ') || ')', '')
	 FROM pg_class c WHERE c.relnamespace = 'queen'::regnamespace AND c.relkind IN ('r', 'p') ORDER BY c.relname`,
	`SELECT 'column ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
	        || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END
	        || coalesce(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), '')
	        || CASE WHEN a.attstorage <> t.typstorage THEN ' STORAGE ' || CASE a.attstorage
	               WHEN 'p' THEN 'PLAIN' WHEN 'e' THEN 'EXTERNAL' WHEN 'm' THEN 'MAIN' ELSE 'EXTENDED' END ELSE '' END
	 FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_type t ON t.oid = a.atttypid
	 LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
	 WHERE c.relnamespace = 'queen'::regnamespace AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
	 ORDER BY c.relname, a.attnum`,
	`SELECT 'constraint ' || r.relname || ' ' || con.conname || ': ' || pg_get_constraintdef(con.oid)
	 FROM pg_constraint con JOIN pg_class r ON r.oid = con.conrelid
	 WHERE con.connamespace = 'queen'::regnamespace ORDER BY r.relname, con.conname`,
	`SELECT 'index ' || c.relname || ': ' || pg_get_indexdef(c.oid)
	 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
	 WHERE c.relnamespace = 'queen'::regnamespace ORDER BY c.relname`,
	`SELECT 'sequence ' || c.relname || ' ' || format_type(s.seqtypid, NULL)
	 FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid
	 WHERE c.relnamespace = 'queen'::regnamespace ORDER BY c.relname`,
	`SELECT 'type ' || t.typname || ' ' || t.typtype::text
	 FROM pg_type t WHERE t.typnamespace = 'queen'::regnamespace AND t.typtype IN ('e', 'd', 'r', 'm')
	 ORDER BY t.typname`,
	`SELECT 'function ' || p.proname || '(' || pg_get_function_arguments(p.oid) || ') RETURNS ' || pg_get_function_result(p.oid)
	        || ' LANGUAGE ' || l.lanname
	        || CASE p.provolatile WHEN 'i' THEN ' IMMUTABLE' WHEN 's' THEN ' STABLE' ELSE ' VOLATILE' END
	        || CASE WHEN p.proisstrict THEN ' STRICT' ELSE '' END
	        || CASE WHEN p.prosecdef THEN ' SECURITY DEFINER' ELSE '' END
	        || CASE p.proparallel WHEN 's' THEN ' PARALLEL SAFE' WHEN 'r' THEN ' PARALLEL RESTRICTED' ELSE '' END
	        || coalesce(' SET ' || array_to_string(p.proconfig, ', '), '')
	        || ' BODY ' || encode(sha256(convert_to(p.prosrc, 'UTF8')), 'hex')
	 FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
	 WHERE p.pronamespace = 'queen'::regnamespace ORDER BY p.proname, pg_get_function_identity_arguments(p.oid)`,
	`SELECT 'trigger ' || t.tgname || ': ' || pg_get_triggerdef(t.oid)
	 FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
	 WHERE c.relnamespace = 'queen'::regnamespace AND NOT t.tgisinternal ORDER BY c.relname, t.tgname`,
	`SELECT 'comment ' || o.type || ' ' || o.identity || ': ' || d.description
	 FROM pg_description d, pg_identify_object(d.classoid, d.objoid, d.objsubid) o
	 WHERE o.schema = 'queen' ORDER BY o.type, o.identity`,
}

// schemaOf reads the queen schema of the database behind pool.
func schemaOf(t testing.TB, pool *pgxpool.Pool) []string {
	t.Helper()
	var out []string
	for _, q := range schemaQueries {
		out = append(out, textRows(t, pool, q)...)
	}
	return out
}

// lineDiff says which lines of want are not in got (-) and which lines of
// got are not in want (+), in their order; "" when there are none.
func lineDiff(want, got []string) string {
	in := func(lines []string) map[string]bool {
		m := make(map[string]bool, len(lines))
		for _, l := range lines {
			m[l] = true
		}
		return m
	}
	inWant, inGot := in(want), in(got)
	var b strings.Builder
	for _, l := range want {
		if !inGot[l] {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range got {
		if !inWant[l] {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	if b.Len() == 0 && strings.Join(want, "\n") != strings.Join(got, "\n") {
		return "the same lines in another order\n"
	}
	return b.String()
}

// readSnapshot reads a committed snapshot file without its comment lines.
func readSnapshot(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with: go test ./pgwire/schema -run %s -update)", err, t.Name())
	}
	var out []string
	for _, l := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// writeSnapshot writes lines under a header that says how to regenerate them.
func writeSnapshot(t *testing.T, path, about string, lines []string) {
	t.Helper()
	text := "# " + about + "\n# Regenerate: go test ./pgwire/schema -run " + t.Name() + " -update\n" + strings.Join(lines, "\n") + "\n"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSchemaSnapshot compares the schema of a freshly migrated database
// with the committed testdata/schema.txt, so that a change of the schema
// shows in review as a change of that file.
func TestSchemaSnapshot(t *testing.T) {
	t.Parallel()
	got := schemaOf(t, newDB(t).Pool())
	if *update {
		writeSnapshot(t, schemaFile, "The queen schema of a freshly migrated database (function bodies as SHA-256; the text is pgwire/schema/functions).", got)
		return
	}
	if d := lineDiff(readSnapshot(t, schemaFile), got); d != "" {
		t.Fatalf("the migrated schema differs from %s (- only in the file, + only in the database); "+
			"if the change is meant, regenerate with: go test ./pgwire/schema -run TestSchemaSnapshot -update\n%s", schemaFile, d)
	}
}

// A database migrated by an earlier bridge (at an earlier step), then by
// this one, ends with the schema a fresh database gets: the same tables and
// the same function texts.
func TestUpgradeEndsWithTheFreshSchema(t *testing.T) {
	t.Parallel()
	fresh := schemaOf(t, newDB(t).Pool())
	for _, step := range []int{2, 5, 8} {
		t.Run(fmt.Sprintf("from-%04d", step), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, err := pgwire.Open(ctx, pgwire.Config{DSN: testenv.NewDatabase(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := schema.MigrateTo(ctx, db.Pool(), step); err != nil {
				t.Fatal(err)
			}
			// A segment written by the bundle call of that step (0002's to
			// 0008's log_push_multi_v1), so that the migrations after it
			// run over rows.
			w := write("before", "p", "a")
			if _, err := db.Pool().Exec(ctx, `SELECT queen.log_push_multi_v1($1, $2, $3, $4, $5, $6)`,
				[]string{w.Queue}, []string{w.Partition}, []int32{w.Count}, [][]byte{w.Hashes}, []int64{0}, [][]byte{w.Blob}); err != nil {
				t.Fatal(err)
			}
			if err := db.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			if d := lineDiff(fresh, schemaOf(t, db.Pool())); d != "" {
				t.Fatalf("upgraded from step %d, the schema differs from a fresh one (- fresh only, + upgraded only):\n%s", step, d)
			}
			if r := push(t, db, write("before", "p", "a", "b"))[0]; r.Status != segment.Duplicate || r.Dups[0].Offset != 1 {
				t.Fatalf("after the upgrade, a repeat of the earlier segment's frame: %+v", r)
			}
		})
	}
}

// TestAppliedMigrationsDoNotChange: a numbered migration, once released, is
// history: databases have applied it and will not again. The committed
// testdata/migrations.txt holds each file's SHA-256; a new migration is
// added to it with -update, an old one's line must not change.
func TestAppliedMigrationsDoNotChange(t *testing.T) {
	t.Parallel()
	const path = "testdata/migrations.txt"
	entries, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		body, err := os.ReadFile(filepath.Join("migrations", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(body)
		got = append(got, e.Name()+" "+hex.EncodeToString(sum[:]))
	}
	if *update {
		writeSnapshot(t, path, "SHA-256 of each numbered migration: once applied by a release, a migration's text does not change.", got)
		return
	}
	want := readSnapshot(t, path)
	if d := lineDiff(want, got); d != "" {
		t.Fatalf("migrations differ from %s (- recorded, + now); an applied migration must stay as it is: "+
			"write a new one instead (a new file is recorded with -update)\n%s", path, d)
	}
}
