package pgwire_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/queenbridge/queenbridge/jsonapi"
)

// TestOptionDefaultsAgree holds the defaults of the queue options to one
// value each: jsonapi.OptionDefaults (every Go user's), consumer_option_v2
// (every statement's: no statement or function file writes a default of
// its own), and the table in docs/api.md.
func TestOptionDefaultsAgree(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	ctx := context.Background()

	// Every option a statement or function reads, by name.
	asked := map[string][]string{}
	call := regexp.MustCompile(`consumer_option_v(\d+)\([^,()]+,\s*'(\w+)'`)
	sources, err := filepath.Glob("schema/functions/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	statements, err := filepath.Glob("sql/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	sources = append(sources, statements...)
	goFiles, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range goFiles {
		if !strings.HasSuffix(f, "_test.go") {
			sources = append(sources, f)
		}
	}
	for _, f := range sources {
		if f == filepath.Join("schema", "functions", "consumer_option_v1.sql") {
			continue // kept for bridges of an earlier version
		}
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(text), -1) {
			if m[1] != "2" {
				t.Errorf("%s calls consumer_option_v%s (%s): the default would be written at the call, not in consumer_option_v2", f, m[1], m[2])
			}
			asked[m[2]] = append(asked[m[2]], f)
		}
	}
	if len(asked) == 0 {
		t.Fatal("no statement reads a consumer option: the pattern no longer finds the calls")
	}

	sqlDefault := func(name string) pgtype.Int4 {
		t.Helper()
		var v pgtype.Int4
		if err := db.Pool().QueryRow(ctx, `SELECT queen.consumer_option_v2('{}'::jsonb, $1)`, name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for name, where := range asked {
		goValue, ok := jsonapi.OptionDefaults[name]
		if !ok {
			t.Errorf("%s read option %q, which jsonapi.OptionDefaults does not hold", strings.Join(slices.Compact(where), ", "), name)
			continue
		}
		if v := sqlDefault(name); !v.Valid || int64(v.Int32) != goValue {
			got := "NULL"
			if v.Valid {
				got = strconv.Itoa(int(v.Int32))
			}
			t.Errorf("option %q: consumer_option_v2 defaults to %s, jsonapi.OptionDefaults to %d", name, got, goValue)
		}
	}
	for name := range jsonapi.OptionDefaults {
		if _, ok := asked[name]; !ok {
			if v := sqlDefault(name); v.Valid {
				t.Errorf("option %q: no statement reads it, yet consumer_option_v2 has a default for it (%d)", name, v.Int32)
			}
		}
	}
	// A set option is read as set, whatever its default.
	var set pgtype.Int4
	if err := db.Pool().QueryRow(ctx, `SELECT queen.consumer_option_v2('{"leaseTime": 7.9}'::jsonb, 'leaseTime')`).Scan(&set); err != nil || set.Int32 != 7 {
		t.Errorf("a leaseTime of 7.9 reads as %d (valid %v, %v), want 7", set.Int32, set.Valid, err)
	}

	// docs/api.md's table, in its Configure section.
	doc, err := os.ReadFile(filepath.Join("..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "\n## Configure\n")
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `(\\w+)` \\| ([^|]+) \\|")
	documented := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		name, value := m[1], strings.TrimSpace(m[2])
		documented[name] = true
		goValue, ok := jsonapi.OptionDefaults[name]
		if !ok {
			t.Errorf("docs/api.md gives option %q a default (%s) that jsonapi.OptionDefaults does not hold", name, value)
		} else if value != strconv.FormatInt(goValue, 10) {
			t.Errorf("docs/api.md gives option %q the default %s, jsonapi.OptionDefaults %d", name, value, goValue)
		}
	}
	for name := range jsonapi.OptionDefaults {
		if !documented[name] {
			t.Errorf("option %q has a default that the table in docs/api.md (Configure) does not give", name)
		}
	}
}
