package schema

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
)

// functionFiles hold the current text of every function of the queen schema,
// one function per file, named after it: pgwire/doc.go has the rules.
//
//go:embed functions/*.sql
var functionFiles embed.FS

type function struct {
	name string // the file's name without ".sql": the function's name in schema queen
	sql  string
	sha  string // hex SHA-256 of sql, recorded in queen.schema_functions
}

// statementStart finds the lines that start a statement: a function file's
// one CREATE, or anything else that does not belong in it. Bodies are
// indented, so their lines never match (nor do a header's SET clauses).
var statementStart = regexp.MustCompile(`(?im)^(CREATE|ALTER|DROP|INSERT|UPDATE|DELETE|TRUNCATE|COMMENT|GRANT|REVOKE|DO)\b.*$`)

// functions reads the function files, sorted by name, and checks that each
// holds exactly one CREATE OR REPLACE FUNCTION of the function it is named
// after.
func functions() ([]function, error) { return functionsIn(functionFiles) }

// functionsIn reads the function files of fsys's directory functions, as
// functions does.
func functionsIn(fsys fs.FS) ([]function, error) {
	entries, err := fs.ReadDir(fsys, "functions")
	if err != nil {
		return nil, err
	}
	var out []function
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".sql")
		if !ok {
			return nil, fmt.Errorf("schema: function file %q must end in .sql", e.Name())
		}
		body, err := fs.ReadFile(fsys, "functions/"+e.Name())
		if err != nil {
			return nil, err
		}
		starts := statementStart.FindAllString(string(body), -1)
		if len(starts) != 1 || !strings.HasPrefix(starts[0], "CREATE OR REPLACE FUNCTION queen."+name+"(") {
			return nil, fmt.Errorf("schema: function file %s must hold one statement, CREATE OR REPLACE FUNCTION queen.%s(...), and no other; it starts %q",
				e.Name(), name, starts)
		}
		sum := sha256.Sum256(body)
		out = append(out, function{name: name, sql: string(body), sha: hex.EncodeToString(sum[:])})
	}
	return out, nil
}

// applyFunctions runs, in order, every function file whose text is not the
// one recorded in queen.schema_functions (or whose function is missing:
// dropped by a migration so that the file can make it anew), and records
// what it applied. It runs inside Migrate's transaction, after the numbered
// migrations, so a file may rely on every table and column they make.
func applyFunctions(ctx context.Context, tx pgx.Tx, fns []function) error {
	type state struct {
		Name, SHA string
		Exists    bool
	}
	rows, err := tx.Query(ctx, `SELECT f.name, f.sha256,
			EXISTS (SELECT 1 FROM pg_proc p WHERE p.pronamespace = 'queen'::regnamespace AND p.proname = f.name)
		FROM queen.schema_functions f`)
	if err != nil {
		return fmt.Errorf("schema: read schema_functions: %w", err)
	}
	states, err := pgx.CollectRows(rows, pgx.RowToStructByPos[state])
	if err != nil {
		return fmt.Errorf("schema: read schema_functions: %w", err)
	}
	recorded := make(map[string]state, len(states))
	for _, s := range states {
		recorded[s.Name] = s
	}
	for _, fn := range fns {
		if s, ok := recorded[fn.name]; ok && s.Exists && s.SHA == fn.sha {
			continue
		}
		if _, err := tx.Exec(ctx, fn.sql); err != nil {
			return fmt.Errorf("schema: apply function file %s.sql: %w", fn.name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO queen.schema_functions (name, sha256) VALUES ($1, $2)
			ON CONFLICT (name) DO UPDATE SET sha256 = EXCLUDED.sha256, applied_at = now()`, fn.name, fn.sha); err != nil {
			return fmt.Errorf("schema: record function file %s.sql: %w", fn.name, err)
		}
	}
	return nil
}
