package schema_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/queenbridge/queenbridge/internal/testenv"
	"github.com/queenbridge/queenbridge/pgwire"
	"github.com/queenbridge/queenbridge/pgwire/schema"
)

// retiredFunctions are the functions a migration dropped because no
// released bridge calls them any more (docs/operations.md lists them under
// "How far back a bridge may be"): the _vN rule lets nothing else go.
var retiredFunctions = map[string]string{
	"queen.log_push_one_v1(bigint,integer,uuid,integer,bytea,bigint,bytea,timestamp with time zone)": "0009",
	"queen.log_push_multi_v1(text[],text[],integer[],bytea[],bigint[],bytea[],uuid[],integer[])":     "0009",
	"queen.log_probe_v1(bigint,bigint,bigint,timestamp with time zone,bytea,integer)":                "0009",
}

// functionSignatures lists the queen functions of db's database with their
// argument types, as an older bridge's call resolves them.
func functionSignatures(t *testing.T, db *pgwire.DB) []string {
	return textRows(t, db.Pool(), `SELECT p.oid::regprocedure::text FROM pg_proc p
		WHERE p.pronamespace = 'queen'::regnamespace ORDER BY 1`)
}

// The _vN rule, checked for every function an older bridge may call: each
// function any step of the migrations made (and those the function files
// of a step-0012 bridge made) is still there, with its argument types,
// after the newest migrations, in a fresh database and in one upgraded
// from that step; unless it is one of the retired functions, which the
// operations guide names.
func TestOlderBridgesFunctionsStayCallable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ever := map[string]string{} // signature -> the step that had it
	steps := openBridge(t, testenv.NewDatabase(t))
	entries, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		num, _, _ := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.MigrateTo(ctx, steps.Pool(), v); err != nil {
			t.Fatal(err)
		}
		for _, s := range functionSignatures(t, steps) {
			if _, ok := ever[s]; !ok {
				ever[s] = e.Name()
			}
		}
	}
	upgraded := openBridge(t, testenv.NewDatabase(t))
	if err := schema.MigrateOlder(ctx, upgraded.Pool(), 12, os.DirFS("testdata/bridge-0012")); err != nil {
		t.Fatal(err)
	}
	for _, s := range functionSignatures(t, upgraded) {
		if _, ok := ever[s]; !ok {
			ever[s] = "the function files of step 0012"
		}
	}
	if err := upgraded.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	guide, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, db := range map[string]*pgwire.DB{"fresh": newDB(t), "upgraded from step 0012": upgraded} {
		now := map[string]bool{}
		for _, s := range functionSignatures(t, db) {
			now[s] = true
		}
		for s, from := range ever {
			if now[s] {
				continue
			}
			if _, ok := retiredFunctions[s]; !ok {
				t.Errorf("%s: %s (made by %s) is gone after the newest migrations: an older bridge may still call it", name, s, from)
			}
		}
	}
	for s, by := range retiredFunctions {
		fn, _, _ := strings.Cut(strings.TrimPrefix(s, "queen."), "(")
		if _, ok := ever[s]; !ok {
			t.Errorf("%s is listed as retired but no step made it", s)
		}
		if !strings.Contains(string(guide), fn) || !strings.Contains(string(guide), by) {
			t.Errorf("docs/operations.md does not name %s as retired by migration %s", fn, by)
		}
	}
}
